"""Turn-level ranking as the official protocol ranks turns: a corpus of user turns.

Upstream's turn granularity (``src/retrieval/run_retrieval.py --granularity turn``) indexes each
user turn as its own document and ranks those; ``recall_*@k`` then counts turns. The session
notes cannot give that ranking: a note chunk packs several user turns, so a hit on the one
relevant turn brings its neighbours along in line order. So each question's turns are indexed in
a workspace of their own (``ingest.ingest_turns``: one note per user turn) and searched with the
run's search pipeline, the same config as the session ranking; each hit maps to the one turn its
note holds, a turn ranking at its best hit.
"""

from __future__ import annotations

from typing import Any

from reme_lme.anchors import SpanResolver
from reme_lme.data import Session
from reme_lme.ingest import ingest_turns
from reme_lme.ranking import rank
from reme_lme.searcher import Searcher
from reme_lme.workspace import fresh_workspace


def rank_turns(
    question: str,
    sessions: list[Session],
    *,
    config: dict[str, Any],
    pipeline: str,
    limit: int,
    vector_cache: str | None = None,
) -> list[str]:
    """Turn ids (``<session id>_<n>``, 1-based as upstream), best first, without repeats."""
    with fresh_workspace(config, vector_cache, prefix="reme-lme-turns-") as reme:
        ingested = ingest_turns(reme.root, sessions)
        reme.index()
        hits = Searcher(reme, pipeline, limit)(question)
        return rank(hits, SpanResolver.for_folder(reme.root), ingested)[1]
