"""Fusing the arms' rankings into one, with scores normalised to 0..1.

Every method gives 1.0 to a chunk ranked first (or scored highest) by every arm that ran, so
``min_score`` keeps its meaning with the vector arm on or off. The methods (``search.fusion``):

- ``rrf``: reciprocal rank fusion, ``weight / (k + rank)`` per arm; ranks only.
- ``convex``: each arm's scores normalised (keyword: divided by the top score, since a BM25
  score of 0 means no match; vector: min-max over its candidates, since cosines have no natural
  zero), then a weighted sum; uses how far apart the scores are, which ranks throw away. With
  ``floor_rank`` N (``search.vector_floor_rank``) the vector arm's zero is the cosine at its
  Nth candidate instead of its last (lower ones count 0), so the scale no longer depends on how
  many candidates the search fetched (limit x ``candidate_multiplier``).
- ``adaptive``: RRF whose vector weight shrinks when the keyword arm has a clear winner (its top
  score stands well above the rest) and grows when it has none: keyword evidence decides per
  query how much the meaning arm may move the ranking.
- ``rerank``: the keyword arm's candidates, reordered by the convex score of both arms; vector
  hits the keyword arm did not find follow, so a query with no word in common still answers.
- ``interleave``: two convex rankings taken in turn, one at the configured vector weight and one
  at twice it (capped at 1), each chunk once: the keyword-leaning ranking keeps its first few in
  every top k while the meaning-leaning one brings the paraphrase finds up; ``pattern``
  (``search.interleave_pattern``) says whose turn it is, ``a`` the keyword-leaning ranking, ``b``
  the other, repeated (``ab``: one each; ``aab``: two of the first for one of the second).

Measured: README "Fusion, measured".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

FusionMethod = Literal["rrf", "convex", "adaptive", "rerank", "interleave"]
FUSION_METHODS: tuple[str, ...] = ("rrf", "convex", "adaptive", "rerank", "interleave")

KEYWORD = "keyword"

Ranked = Mapping[str, Sequence[tuple[str, float]]]
"""Arm name -> ``(chunk id, arm score)`` best first."""


@dataclass
class Fused:
    chunk_id: str
    score: float
    ranks: dict[str, int] = field(default_factory=dict)


def reciprocal_rank_fusion(
    ranked: Mapping[str, Sequence[str]], weights: Mapping[str, float], k: int = 60
) -> list[Fused]:
    """Fuse ranked id lists from several arms.

    A chunk earns ``weight / (k + rank)`` from each arm that found it. The sum is divided by what a
    chunk ranked first by every arm that ran would earn, so 1.0 means "top of every arm" whether one
    arm ran or two: ``min_score`` keeps its meaning when the vector arm is off.
    """
    ran = [arm for arm in ranked if weights.get(arm, 0.0) > 0]
    best_possible = sum(weights[arm] / (k + 1) for arm in ran)
    if best_possible <= 0:
        return []
    fused: dict[str, Fused] = {}
    for arm in ran:
        for position, chunk_id in enumerate(ranked[arm], start=1):
            entry = fused.setdefault(chunk_id, Fused(chunk_id, 0.0))
            entry.score += weights[arm] / (k + position)
            entry.ranks[arm] = position
    for entry in fused.values():
        entry.score = min(1.0, entry.score / best_possible)
    return _ordered(fused)


def check_floor_rank(floor_rank: int) -> int:
    """``floor_rank`` if valid: 0 (min-max over every candidate) or a rank >= 2."""
    if isinstance(floor_rank, bool) or not isinstance(floor_rank, int):
        raise ValueError(f"floor_rank must be an integer, got {floor_rank!r}")
    if floor_rank < 0 or floor_rank == 1:
        raise ValueError(
            f"floor_rank must be 0 (min-max over every candidate) or >= 2, got {floor_rank}"
        )
    return floor_rank


def check_pattern(pattern: str) -> str:
    """``pattern`` if valid: 2..16 letters of ``a`` and ``b``, each at least once."""
    if not isinstance(pattern, str) or not 2 <= len(pattern) <= 16 or set(pattern) != {"a", "b"}:
        raise ValueError(
            f"interleave pattern must be 2..16 letters of 'a' and 'b', both used, got {pattern!r}"
        )
    return pattern


def convex_fusion(
    results: Ranked, weights: Mapping[str, float], *, floor_rank: int = 0
) -> list[Fused]:
    """Weighted sum of each arm's normalised scores (0 where an arm missed a chunk); the
    non-keyword arms min-max over their candidates, or with ``floor_rank`` N >= 2 between their
    best and their Nth score (the last where fewer; lower ones 0)."""
    check_floor_rank(floor_rank)
    ran = [arm for arm in results if weights.get(arm, 0.0) > 0]
    total = sum(weights[arm] for arm in ran)
    if total <= 0:
        return []
    fused: dict[str, Fused] = {}
    for arm in ran:
        hits = results[arm]
        normalised = _by_top(hits) if arm == KEYWORD else _min_max(hits, floor_rank)
        for position, (chunk_id, value) in enumerate(normalised, start=1):
            entry = fused.setdefault(chunk_id, Fused(chunk_id, 0.0))
            entry.score += weights[arm] * value / total
            entry.ranks[arm] = position
    for entry in fused.values():
        entry.score = min(1.0, entry.score)
    return _ordered(fused)


def keyword_evidence(hits: Sequence[tuple[str, float]], depth: int = 10) -> float:
    """How clearly the keyword arm found something, 0..1: the top score's lead over the score
    at ``depth`` (0 when it found nothing or everything scores alike)."""
    if not hits:
        return 0.0
    top = hits[0][1]
    if top <= 0:
        return 0.0
    floor = hits[min(depth, len(hits)) - 1][1]
    return max(0.0, min(1.0, (top - floor) / top))


def adaptive_fusion(
    results: Ranked, weights: Mapping[str, float], k: int = 60, keyword: str = KEYWORD
) -> list[Fused]:
    """RRF with the non-keyword arms' weights scaled by ``1 - keyword_evidence``."""
    if keyword not in results:
        return reciprocal_rank_fusion(_ids(results), weights, k)
    evidence = keyword_evidence(results[keyword])
    scaled = {
        arm: weight if arm == keyword else weight * (1.0 - evidence)
        for arm, weight in weights.items()
    }
    if sum(scaled.get(arm, 0.0) for arm in results) <= 0:
        scaled = dict(weights)
    return reciprocal_rank_fusion(_ids(results), scaled, k)


def rerank_fusion(
    results: Ranked, weights: Mapping[str, float], keyword: str = KEYWORD, *, floor_rank: int = 0
) -> list[Fused]:
    """The keyword arm's candidates in convex order; then the other arms' own finds."""
    fused = convex_fusion(results, weights, floor_rank=floor_rank)
    if keyword not in results or not results[keyword]:
        return fused
    found = {chunk_id for chunk_id, _ in results[keyword]}
    first = [f for f in fused if f.chunk_id in found]
    rest = [f for f in fused if f.chunk_id not in found]
    # Keep scores monotonic with the order, so min_score cuts the list where it reads.
    ceiling = min((f.score for f in first), default=1.0)
    for entry in rest:
        entry.score = min(entry.score, ceiling)
    return first + rest


def widened(
    weights: Mapping[str, float], arms: Sequence[str], factor: float = 2.0, keyword: str = KEYWORD
) -> dict[str, float] | None:
    """``weights`` with the non-keyword arms' share of the total (over ``arms``, those that ran)
    multiplied by ``factor`` and capped at all of it; None when there is no share to widen (only
    one kind of arm ran)."""
    if factor <= 0:
        raise ValueError(f"factor must be > 0, got {factor}")
    ran = [arm for arm in arms if weights.get(arm, 0.0) > 0]
    total = sum(weights[arm] for arm in ran)
    others = sum(weights[arm] for arm in ran if arm != keyword)
    if keyword not in ran or others <= 0:
        return None
    share = min(1.0, factor * others / total)
    scale = share * total / others
    return {arm: (1.0 - share) * total if arm == keyword else weights[arm] * scale for arm in ran}


def interleave_fusion(
    results: Ranked,
    weights: Mapping[str, float],
    *,
    factor: float = 2.0,
    keyword: str = KEYWORD,
    pattern: str = "ab",
    floor_rank: int = 0,
) -> list[Fused]:
    """The convex ranking at ``weights`` (``a``) and the one with the other arms' share
    ``factor`` times larger (``b``, :func:`widened`), taken in turn as ``pattern`` says, repeated
    (``ab``: one each, the keyword-leaning one first); a chunk is kept where it first appears.
    Each keeps its convex score from the ranking that placed it, lowered to the one before it
    where needed, so scores never rise down the list."""
    check_pattern(pattern)
    narrow = convex_fusion(results, weights, floor_rank=floor_rank)
    wide_weights = widened(weights, list(results), factor, keyword)
    if wide_weights is None:
        return narrow
    wide = convex_fusion(results, wide_weights, floor_rank=floor_rank)
    out: list[Fused] = []
    seen: set[str] = set()
    lists, positions = (narrow, wide), [0, 0]
    step = 0
    while positions[0] < len(narrow) or positions[1] < len(wide):
        turn = 0 if pattern[step % len(pattern)] == "a" else 1
        step += 1
        source, i = lists[turn], positions[turn]
        while i < len(source) and source[i].chunk_id in seen:
            i += 1
        if i < len(source):
            entry = source[i]
            score = min(entry.score, out[-1].score) if out else entry.score
            out.append(Fused(entry.chunk_id, score, dict(entry.ranks)))
            seen.add(entry.chunk_id)
            i += 1
        positions[turn] = i
    return out


def fuse(
    results: Ranked,
    weights: Mapping[str, float],
    *,
    method: FusionMethod = "rrf",
    k: int = 60,
    floor_rank: int = 0,
    pattern: str = "ab",
) -> list[Fused]:
    """Fuse with the configured ``method`` (see the module docstring); ``floor_rank`` applies to
    the score-based methods (convex, rerank, interleave), ``pattern`` to interleave."""
    check_floor_rank(floor_rank)
    check_pattern(pattern)
    fusers: dict[str, Callable[[], list[Fused]]] = {
        "rrf": lambda: reciprocal_rank_fusion(_ids(results), weights, k),
        "convex": lambda: convex_fusion(results, weights, floor_rank=floor_rank),
        "adaptive": lambda: adaptive_fusion(results, weights, k),
        "rerank": lambda: rerank_fusion(results, weights, floor_rank=floor_rank),
        "interleave": lambda: interleave_fusion(
            results, weights, pattern=pattern, floor_rank=floor_rank
        ),
    }
    if method not in fusers:
        raise ValueError(f"unknown fusion method {method!r}; known: {', '.join(FUSION_METHODS)}")
    return fusers[method]()


def _ids(results: Ranked) -> dict[str, list[str]]:
    return {arm: [chunk_id for chunk_id, _ in hits] for arm, hits in results.items()}


def _by_top(hits: Sequence[tuple[str, float]]) -> list[tuple[str, float]]:
    """Scores divided by the best one (for scores whose 0 means "no match")."""
    top = max((value for _, value in hits), default=0.0)
    if top <= 0:
        return [(chunk_id, 1.0) for chunk_id, _ in hits]
    return [(chunk_id, max(0.0, value) / top) for chunk_id, value in hits]


def _min_max(hits: Sequence[tuple[str, float]], floor_rank: int = 0) -> list[tuple[str, float]]:
    """Scores mapped to 0..1 over this list (best 1.0, worst 0.0; all 1.0 when alike); with
    ``floor_rank`` N, 0.0 is the Nth best score (the worst where fewer) and lower ones clip."""
    if not hits:
        return []
    values = [value for _, value in hits]
    high = max(values)
    low = min(values) if floor_rank <= 0 else sorted(values, reverse=True)[:floor_rank][-1]
    if high - low <= 1e-12:
        return [(chunk_id, 1.0 if value >= low else 0.0) for chunk_id, value in hits]
    return [(chunk_id, max(0.0, (value - low) / (high - low))) for chunk_id, value in hits]


def _ordered(fused: Mapping[str, Fused]) -> list[Fused]:
    # Ties broken by id so results are deterministic.
    return sorted(fused.values(), key=lambda f: (-f.score, f.chunk_id))
