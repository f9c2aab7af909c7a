"""Reciprocal rank fusion: normalised scores, weights, deterministic ties."""

from __future__ import annotations

import pytest

from reme_core.search.fusion import reciprocal_rank_fusion


def scores(fused: list) -> dict[str, float]:
    return {f.chunk_id: f.score for f in fused}


def test_one_arm_first_is_one_and_scores_follow_rrf() -> None:
    fused = reciprocal_rank_fusion({"keyword": ["a", "b", "c"]}, {"keyword": 1.0}, k=60)
    assert [f.chunk_id for f in fused] == ["a", "b", "c"]
    assert fused[0].score == 1.0
    assert fused[1].score == pytest.approx(61 / 62)
    assert fused[2].score == pytest.approx(61 / 63)
    assert [f.ranks for f in fused] == [{"keyword": 1}, {"keyword": 2}, {"keyword": 3}]


def test_first_in_every_arm_scores_one_with_two_arms() -> None:
    fused = reciprocal_rank_fusion(
        {"keyword": ["a", "b"], "vector": ["a", "c"]}, {"keyword": 1.0, "vector": 0.7}, k=60
    )
    assert fused[0].chunk_id == "a"
    assert fused[0].score == 1.0
    assert fused[0].ranks == {"keyword": 1, "vector": 1}
    assert all(0.0 <= f.score <= 1.0 for f in fused)


def test_two_arm_weighting() -> None:
    # "b" is first for the keyword arm only, "c" first for the (lighter) vector arm only.
    fused = reciprocal_rank_fusion(
        {"keyword": ["b", "x"], "vector": ["c", "y"]}, {"keyword": 1.0, "vector": 0.7}, k=60
    )
    got = scores(fused)
    best = 1.0 / 61 + 0.7 / 61
    assert got["b"] == pytest.approx((1.0 / 61) / best)
    assert got["c"] == pytest.approx((0.7 / 61) / best)
    assert got["b"] > got["c"]
    # The keyword arm weighs more: its second place still beats the vector arm's first.
    assert [f.chunk_id for f in fused] == ["b", "x", "c", "y"]


def test_found_by_both_arms_beats_first_of_one() -> None:
    fused = reciprocal_rank_fusion(
        {"keyword": ["solo", "both"], "vector": ["other", "both"]},
        {"keyword": 1.0, "vector": 1.0},
        k=60,
    )
    assert fused[0].chunk_id == "both"
    assert fused[0].ranks == {"keyword": 2, "vector": 2}
    assert fused[0].score < 1.0


def test_arm_with_zero_weight_is_ignored() -> None:
    fused = reciprocal_rank_fusion(
        {"keyword": ["a"], "vector": ["z"]}, {"keyword": 1.0, "vector": 0.0}, k=60
    )
    assert [f.chunk_id for f in fused] == ["a"]
    assert fused[0].score == 1.0


def test_nothing_ran_gives_nothing() -> None:
    assert reciprocal_rank_fusion({}, {"keyword": 1.0}) == []
    assert reciprocal_rank_fusion({"keyword": []}, {"keyword": 1.0}) == []


def test_ties_are_broken_by_id_whatever_the_input_order() -> None:
    weights = {"keyword": 1.0, "vector": 1.0}
    one = reciprocal_rank_fusion({"keyword": ["q", "p"], "vector": ["p", "q"]}, weights)
    two = reciprocal_rank_fusion({"vector": ["p", "q"], "keyword": ["q", "p"]}, weights)
    assert one[0].score == one[1].score
    assert [f.chunk_id for f in one] == ["p", "q"]
    assert [(f.chunk_id, f.score) for f in one] == [(f.chunk_id, f.score) for f in two]


def test_small_k_still_normalises() -> None:
    fused = reciprocal_rank_fusion({"keyword": ["a", "b"]}, {"keyword": 1.0}, k=0)
    assert scores(fused) == {"a": 1.0, "b": pytest.approx(0.5)}
