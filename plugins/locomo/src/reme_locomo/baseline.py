"""The floor: plain BM25 over turns, one document per turn, computed beside every run.

Documents are the turns' note bodies (``ingest.turn_text``: speaker, text, shared-photo caption),
so the floor ranks the text reme indexes; tokens are lower-cased ``\\w+`` runs, no stopwords, no
stemming; scoring is bm25s's default (Lucene BM25, k1 1.5, b 0.75). Turns with no query term
score 0 and are not ranked (nothing matched them), as a search would not return them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import bm25s
import numpy as np

_TOKEN = re.compile(r"\w+")


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


class TurnBm25:
    """``TurnBm25(ids, texts).rank(query, k)`` -> the top ``k`` turn ids, best first."""

    def __init__(self, ids: Sequence[str], texts: Sequence[str]):
        self.ids = list(ids)
        corpus = [tokens(t) for t in texts]
        self.vocab = {tok for doc in corpus for tok in doc}
        self.model = bm25s.BM25()
        self.model.index(corpus, show_progress=False)

    def rank(self, query: str, k: int) -> list[str]:
        known = [t for t in tokens(query) if t in self.vocab]
        if not known or not self.ids:
            return []
        scores = np.asarray(self.model.get_scores(known), dtype=float)
        # Stable: equal scores keep the conversation's order, so a rerun ranks alike.
        order = np.argsort(-scores, kind="stable")
        return [self.ids[i] for i in order[:k] if scores[i] > 0]
