"""Search hits -> ranked session ids and ranked turn ids, for the retrieval metrics.

Each hit, best first, stands for transcript spans (``anchors.SpanResolver``); a span's session
joins the session ranking at its first appearance, and its turns (in line order) join the turn
ranking. Turns outside the corpus (assistant turns) are left out of the turn ranking.

Hits come best first, so a turn ranks at the best hit covering it. Over the turn corpus (one note
per user turn, ``turn_level``) a hit covers one turn and the turn ranking is the search's own;
over session or memory notes a hit may cover several turns, which then tie and keep line order.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from reme_core.api import dedupe
from reme_lme.anchors import SpanResolver
from reme_lme.ingest import Ingested


def rank(
    hits: Iterable[Mapping[str, Any]], resolver: SpanResolver, ingested: Ingested
) -> tuple[list[str], list[str]]:
    """``(sessions, turns)`` in rank order, without repeats."""
    sessions: list[str] = []
    turns: list[str] = []
    for hit in hits:
        for span in resolver.spans(hit["path"], int(hit["start_line"]), int(hit["end_line"])):
            sid = ingested.session_of.get(span.transcript)
            if sid is None:
                continue
            sessions.append(sid)
            for line in range(span.start, span.end + 1):
                turn = ingested.turn_id(span.transcript, line)
                if turn is not None:
                    turns.append(turn)
    return dedupe(sessions), dedupe(turns)
