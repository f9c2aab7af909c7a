"""The floor: plain BM25 over single messages, one document per message, computed beside every run.

Documents are the conversation's messages (user and assistant), their text as the workspace gets
it (upstream's ``->->`` plan markers stripped, ``BeamMessage.text``); tokens are lower-cased
``\\w+`` runs, no stopwords, no stemming; scoring is bm25s's default (Lucene BM25, k1 1.5, b 0.75).
A message with no query term scores 0 and is not ranked (nothing matched it). Each ranked message
is one result showing one message, so within a budget of k messages shown the floor shows its
first k: its figures are ``bm25_recall@<k>msg`` (and ``bm25_any@<k>msg``) in every question's
metrics, taken by the same ``retrieval_metrics`` as reme's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import bm25s
import numpy as np

from reme_beam.data import BeamMessage
from reme_beam.metrics import metric_name, retrieval_metrics

PREFIX = "bm25_"
"""Prefix of the floor's metrics (``bm25_recall@10msg``) beside reme's (``recall@10msg``)."""
KEYS: tuple[str, ...] = ("recall", "any")
"""The floor's figures: ``shown`` is always k and ``hits`` = ``shown`` (one message per hit)."""
LABEL = "BM25 floor"

_TOKEN = re.compile(r"\w+")
_ROLES = ("user", "assistant")


def tokens(text: str) -> list[str]:
    """Lower-cased ``\\w+`` runs."""
    return _TOKEN.findall(text.lower())


class MessageBm25:
    """``MessageBm25(messages).rank(query, k)`` -> the top ``k`` message ids, best first."""

    def __init__(self, messages: Iterable[BeamMessage]):
        kept = [m for m in messages if m.role in _ROLES]
        self.ids = [m.key for m in kept]
        corpus = [tokens(m.text) for m in kept]
        self.vocab = {tok for doc in corpus for tok in doc}
        self.model = bm25s.BM25()
        if self.ids:
            self.model.index(corpus, show_progress=False)

    def rank(self, query: str, k: int) -> list[str]:
        known = [t for t in tokens(query) if t in self.vocab]
        if not known or not self.ids:
            return []
        scores = np.asarray(self.model.get_scores(known), dtype=float)
        # Stable: equal scores keep the conversation's order, so a rerun ranks alike.
        order = np.argsort(-scores, kind="stable")
        return [self.ids[i] for i in order[:k] if scores[i] > 0]


def floor_metrics(
    ranked: Sequence[str], evidence: Iterable[str], ks: Iterable[int]
) -> dict[str, float]:
    """``bm25_recall@<k>msg`` and ``bm25_any@<k>msg`` of a ranking of single messages; {} without
    evidence."""
    ks = tuple(ks)
    measured = retrieval_metrics([frozenset({i}) for i in ranked], evidence, ks)
    return {
        f"{PREFIX}{metric_name(key, k)}": measured[metric_name(key, k)]
        for k in ks
        for key in KEYS
        if metric_name(key, k) in measured
    }
