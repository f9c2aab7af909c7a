"""Abstention: whether a search found nothing relevant (``SearchResponse.no_match``).

Every query gets hits when the vector arm runs: a nonsense word still has nearest neighbours,
and BM25 still matches an off-topic question's one common word. Fused scores cannot say which
hits mean something (convex fusion divides each arm's scores by its own best, so the top hit of
any query with a keyword match scores at least the keyword weight), so the signal is read from
the arms' own evidence before fusion:

- no arm found anything: no match;
- the keyword arm found nothing (or did not run): no match, unless the vector arm's best cosine
  reaches the model's ``strong`` floor (higher than any nonsense query reached);
- the keyword arm found something: a match, unless the vector arm's best cosine is below the
  model's ``weak`` floor (lower than any answerable dev question's).

Cosines are not comparable across embedding models, so the floors are per model, measured by
benchmarks/abstention.py; for a model without floors only the first two rules apply (a query no
note shares a word with is no match). The flag changes no hit: callers decide what to show.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

KEYWORD = "keyword"
VECTOR = "vector"


@dataclass(frozen=True)
class SimilarityFloors:
    """One embedding model's calibrated cosines for the vector arm's best hit."""

    weak: float
    """Below this, a keyword match is a coincidence of words (off-topic questions)."""
    strong: float
    """At or above this, a hit the keyword arm did not find still means something."""


CALIBRATED: dict[str, SimilarityFloors] = {
    # e5-onnx, measured by benchmarks/abstention.py (2026-12-03) over six dev workspaces: the
    # answerable questions' best cosine is 0.800 at the lowest (642 questions), so ``weak``
    # sits 0.01 below it; off-topic questions' median is 0.797; nonsense words reach 0.861.
    "multilingual-e5-small/onnx-": SimilarityFloors(weak=0.79, strong=0.87),
}
"""Model id prefix -> its floors."""


def floors_for(model_id: str | None) -> SimilarityFloors | None:
    """The calibrated floors of the embedding ``model_id``, if it has been measured."""
    if model_id is None:
        return None
    for prefix, floors in CALIBRATED.items():
        if model_id.startswith(prefix):
            return floors
    return None


def no_match(
    results: Mapping[str, Sequence[tuple[str, float]]], floors: SimilarityFloors | None
) -> bool:
    """True when the arms' rankings (arm -> ``(chunk id, score)`` best first) hold nothing
    relevant to the query (module docstring)."""
    if not any(results.values()):
        return True
    vector = results.get(VECTOR) or []
    best = vector[0][1] if vector else None
    if not results.get(KEYWORD):
        return floors is None or best is None or best < floors.strong
    return floors is not None and best is not None and best < floors.weak
