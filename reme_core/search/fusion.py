"""Reciprocal rank fusion with scores normalised to 0..1."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


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
    # Ties broken by id so results are deterministic.
    return sorted(fused.values(), key=lambda f: (-f.score, f.chunk_id))
