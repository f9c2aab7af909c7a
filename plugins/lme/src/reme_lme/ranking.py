"""Search hits -> ranked session ids and ranked turn ids, for the retrieval metrics.

Each hit, best first, stands for transcript spans (``anchors.SpanResolver``); a span's session
joins the session ranking at its first appearance, and its turns (in line order) join the turn
ranking. Turns outside the corpus (assistant turns) are left out of the turn ranking.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from reme_core.bench import dedupe
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
