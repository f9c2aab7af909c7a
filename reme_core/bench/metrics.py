"""Retrieval metrics that need no LLM, exactly as the benchmarks define them.

LongMemEval (``src/retrieval/eval_utils.py`` upstream): ``recall_any@k``, ``recall_all@k`` and
``ndcg_any@k`` over a ranking of corpus ids. Its DCG divides position ``i`` (1-based, ``i >= 2``)
by ``log2(i)``, so ranks 1 and 2 weigh the same; that quirk is kept so figures compare with the
paper. BEAM: evidence recall@k, the fraction of a question's evidence message ids in the top k.

Rankings are lists of ids, best first, without repeats (``dedupe`` makes one from a list with
repeats, e.g. chunk hits mapped to their sessions). Ids absent from a ranking count as not
retrieved, which is what a full ranking would give them at any k shorter than the corpus.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from typing import TypeVar

H = TypeVar("H", bound=Hashable)

LME_KS: tuple[int, ...] = (1, 3, 5, 10, 30, 50)
"""The cut-offs LongMemEval reports."""


def dedupe(ranked: Iterable[H]) -> list[H]:
    """First occurrences in order: ``[a, b, a, c] -> [a, b, c]``."""
    return list(dict.fromkeys(ranked))


def dcg(relevances: Sequence[float], k: int) -> float:
    """LongMemEval's DCG: ``rel[0] + sum(rel[i] / log2(i + 1) for i in 1..k-1)``."""
    top = list(relevances)[:k]
    if not top:
        return 0.0
    return float(top[0] + sum(rel / math.log2(i + 1) for i, rel in enumerate(top[1:], start=1)))


def recall_any(ranked: Sequence[H], correct: Iterable[H], k: int) -> float:
    """1.0 when any correct id is in the top ``k``, else 0.0 (0.0 when nothing is correct)."""
    top = set(ranked[:k])
    return float(any(doc in top for doc in correct))


def recall_all(ranked: Sequence[H], correct: Iterable[H], k: int) -> float:
    """1.0 when every correct id is in the top ``k`` (vacuously 1.0 when nothing is correct)."""
    top = set(ranked[:k])
    return float(all(doc in top for doc in correct))


def ndcg_any(ranked: Sequence[H], correct: Iterable[H], corpus: Iterable[H], k: int) -> float:
    """LongMemEval's ndcg@k with binary relevance; the ideal ranking puts every correct id of
    ``corpus`` first. 0.0 when the corpus holds no correct id."""
    wanted = set(correct)
    ideal = dcg(sorted((1.0 if doc in wanted else 0.0 for doc in corpus), reverse=True), k)
    if ideal == 0:
        return 0.0
    return dcg([1.0 if doc in wanted else 0.0 for doc in ranked], k) / ideal


def retrieval_metrics(
    ranked: Sequence[H],
    correct: Iterable[H],
    corpus: Iterable[H],
    ks: Iterable[int] = LME_KS,
    prefix: str = "",
) -> dict[str, float]:
    """``{prefix}recall_any@k``, ``{prefix}recall_all@k``, ``{prefix}ndcg_any@k`` for each k.

    ``prefix`` tells levels apart in one item's metrics (``"session_"``, ``"turn_"``).
    """
    wanted = list(dict.fromkeys(correct))
    docs = list(corpus)
    out: dict[str, float] = {}
    for k in ks:
        out[f"{prefix}recall_any@{k}"] = recall_any(ranked, wanted, k)
        out[f"{prefix}recall_all@{k}"] = recall_all(ranked, wanted, k)
        out[f"{prefix}ndcg_any@{k}"] = ndcg_any(ranked, wanted, docs, k)
    return out


def evidence_recall(ranked: Sequence[H], evidence: Iterable[H], k: int) -> float:
    """BEAM: the fraction of ``evidence`` ids found in the top ``k`` (nan without evidence, so
    the caller skips the question rather than counting it as 0 or 1)."""
    wanted = set(evidence)
    if not wanted:
        return math.nan
    return len(wanted & set(ranked[:k])) / len(wanted)
