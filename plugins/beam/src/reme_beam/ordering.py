"""BEAM's event-ordering score: Kendall tau-b between the reference order and the answer's.

As upstream computes it (``evaluation.py``, ``event_ordering_score``): the answer is split into
lines; each line is matched to the first not-yet-matched reference item a judge calls the same
event (``align``), and replaced by it; unmatched lines stay as they are. Then

- precision, recall and F1 of the matched items;
- every item of either list gets its 1-based position in each list, or ``len(union) + 1`` where
  absent, and tau-b of the two rank vectors is normalised to 0..1 (``(tau + 1) / 2``);
- ``final_score = tau_norm * f1`` (nan where tau is undefined: a constant rank vector).

One difference, on purpose: blank lines of the answer are dropped before matching (upstream
keeps them, so an answer with blank lines between items loses precision for each of them).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from pydantic import BaseModel

Same = Callable[[str, str], bool]
"""``same(reference_item, answer_line)``: do the two describe the same event?"""


class OrderingScore(BaseModel):
    precision: float
    recall: float
    f1: float
    tau_norm: float
    final_score: float


def answer_lines(answer: str) -> list[str]:
    return [line.strip() for line in answer.split("\n") if line.strip()]


def align(reference: Sequence[str], system: Sequence[str], same: Same) -> list[str]:
    """``system`` with each line replaced by the first unused reference item it matches."""
    used: set[int] = set()
    out: list[str] = []
    for line in system:
        match = next(
            (i for i, item in enumerate(reference) if i not in used and same(item, line)), None
        )
        if match is None:
            out.append(line)
        else:
            used.add(match)
            out.append(reference[match])
    return out


def ordering_score(reference: Sequence[str], system: Sequence[str]) -> OrderingScore:
    """The score of an answer already aligned to ``reference`` (see ``align``)."""
    ref, sys_ = list(reference), list(system)
    tp = len(set(ref) & set(sys_))
    fp = len([x for x in sys_ if x not in ref])
    fn = len([x for x in ref if x not in sys_])
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    union = list(dict.fromkeys(ref + sys_))
    tie_rank = len(union) + 1

    def ranks(seq: list[str]) -> list[int]:
        position = {item: i + 1 for i, item in enumerate(seq)}  # a repeat keeps its last place
        return [position.get(u, tie_rank) for u in union]

    # tau is undefined (nan) when either rank vector is constant, e.g. a one-item list: the
    # score is then nan, as upstream's, and means skip it.
    tau_norm = (_tau_b(ranks(ref), ranks(sys_)) + 1) / 2
    return OrderingScore(
        precision=precision, recall=recall, f1=f1, tau_norm=tau_norm, final_score=tau_norm * f1
    )


def _tau_b(first: list[int], second: list[int]) -> float:
    if len(first) < 2 or len(set(first)) < 2 or len(set(second)) < 2:
        return math.nan  # what scipy returns too, without its warning
    # scipy.stats takes ~0.6 s to import: load it when a judge scores, not when reme loads plugins.
    from scipy.stats import kendalltau

    return float(kendalltau(first, second, variant="b").statistic)
