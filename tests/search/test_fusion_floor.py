"""The vector arm's fixed-rank floor (search.vector_floor_rank) and interleave's pattern."""

from __future__ import annotations

import pytest

from reme_core.search.fusion import convex_fusion, fuse

WEIGHTS = {"keyword": 0.75, "vector": 0.25}


def _vector(n: int) -> list[tuple[str, float]]:
    """n candidates, cosines falling 0.01 apart from 0.90 (chunk v0 best)."""
    return [(f"v{i}", 0.90 - 0.01 * i) for i in range(n)]


def _vector_scores(fused) -> dict[str, float]:
    return {f.chunk_id: f.score for f in fused}


def test_min_max_moves_with_the_candidate_count_and_a_fixed_floor_does_not() -> None:
    # The same five best candidates fetched 10 or 60 deep: min-max gives v4 a different score,
    # the floor at rank 10 the same one.
    shallow = {"vector": _vector(10)}
    deep = {"vector": _vector(60)}
    only_vector = {"vector": 1.0}
    mm_shallow = _vector_scores(convex_fusion(shallow, only_vector))
    mm_deep = _vector_scores(convex_fusion(deep, only_vector))
    assert mm_shallow["v4"] == pytest.approx(5 / 9)
    assert mm_deep["v4"] == pytest.approx(55 / 59)
    floor_shallow = _vector_scores(convex_fusion(shallow, only_vector, floor_rank=10))
    floor_deep = _vector_scores(convex_fusion(deep, only_vector, floor_rank=10))
    for chunk in ("v0", "v4", "v9"):
        assert floor_shallow[chunk] == pytest.approx(floor_deep[chunk])
    assert floor_deep["v4"] == pytest.approx(5 / 9)
    # Below the floor: 0, not negative; the best stays 1.
    assert floor_deep["v0"] == pytest.approx(1.0)
    assert floor_deep["v30"] == 0.0 and min(floor_deep.values()) == 0.0


def test_a_floor_deeper_than_the_candidates_is_min_max() -> None:
    results = {"keyword": [("v3", 5.0), ("x", 2.0)], "vector": _vector(8)}
    assert [(f.chunk_id, f.score) for f in convex_fusion(results, WEIGHTS, floor_rank=50)] == [
        (f.chunk_id, f.score) for f in convex_fusion(results, WEIGHTS)
    ]


def test_the_floor_leaves_the_keyword_arm_alone() -> None:
    results = {"keyword": [(f"k{i}", 10.0 - i) for i in range(8)]}
    weights = {"keyword": 1.0}
    assert [(f.chunk_id, f.score) for f in convex_fusion(results, weights, floor_rank=2)] == [
        (f.chunk_id, f.score) for f in convex_fusion(results, weights)
    ]


def test_a_flat_top_above_the_floor_gives_one_and_lower_scores_zero() -> None:
    results = {"vector": [("a", 0.8), ("b", 0.8), ("c", 0.5)]}
    scores = _vector_scores(convex_fusion(results, {"vector": 1.0}, floor_rank=2))
    assert scores == {"a": 1.0, "b": 1.0, "c": 0.0}


def test_the_floor_changes_the_fused_order() -> None:
    # The vector arm likes v and x best and the weak keyword match k2 third, all far above a
    # long tail. Over 40 candidates min-max puts k2's cosine near the top of the scale, so k2
    # (0.3 + 0.4 x 0.941) passes the keyword arm's best, k1 (0.6). With the floor at rank 3,
    # k2's cosine is the zero: k1 leads, then v, the vector arm's best, then k2.
    vector = [("v", 0.90), ("x", 0.89), ("k2", 0.88)]
    vector += [(f"z{i}", 0.60 - 0.001 * i) for i in range(37)]
    results = {"keyword": [("k1", 3.0), ("k2", 1.5)], "vector": vector}
    weights = {"keyword": 0.6, "vector": 0.4}
    assert [f.chunk_id for f in fuse(results, weights, method="convex")][:3] == ["k2", "k1", "v"]
    floored = fuse(results, weights, method="convex", floor_rank=3)
    assert [(f.chunk_id, round(f.score, 3)) for f in floored][:3] == [
        ("k1", 0.6),
        ("v", 0.4),
        ("k2", 0.3),
    ]


@pytest.mark.parametrize("bad", [1, -1, 2.5, True, "3"])
def test_a_bad_floor_is_refused(bad) -> None:
    with pytest.raises(ValueError, match="floor_rank"):
        fuse({"vector": _vector(3)}, WEIGHTS, method="convex", floor_rank=bad)


def test_interleave_pattern_takes_the_turns_it_names() -> None:
    # narrow (vector 0.25): k1 k2 k3 v k4; wide (0.5): k1 v k2 k3 k4 (test_fusion_methods).
    results = {
        "keyword": [("k1", 10.0), ("k2", 4.0), ("k3", 3.0), ("k4", 2.0)],
        "vector": [("v", 0.9), ("k1", 0.8), ("k2", 0.5), ("k3", 0.46), ("k4", 0.4)],
    }
    order = {
        pattern: [f.chunk_id for f in fuse(results, WEIGHTS, method="interleave", pattern=pattern)]
        for pattern in ("ab", "aab", "ba")
    }
    assert order["ab"] == ["k1", "v", "k2", "k3", "k4"]
    assert order["aab"] == ["k1", "k2", "v", "k3", "k4"]
    assert order["ba"] == ["k1", "k2", "v", "k3", "k4"]  # wide's k1, narrow's k2, wide's v
    for pattern in ("ab", "aab", "ba"):
        fused = fuse(results, WEIGHTS, method="interleave", pattern=pattern)
        assert [f.score for f in fused] == sorted((f.score for f in fused), reverse=True)


@pytest.mark.parametrize("bad", ["a", "aa", "bbb", "abc", "", "ab" * 9])
def test_a_bad_pattern_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="pattern"):
        fuse({"keyword": [("a", 1.0)]}, WEIGHTS, method="interleave", pattern=bad)


def test_settings_validate_both_keys_and_change_nothing_on_bad_input() -> None:
    from reme_core.settings import load_settings

    search = load_settings(
        overrides=["search.vector_floor_rank=50", "search.interleave_pattern=aab"], env={}
    ).search
    assert (search.vector_floor_rank, search.interleave_pattern) == (50, "aab")
    defaults = load_settings(env={}).search
    assert (defaults.vector_floor_rank, defaults.interleave_pattern) == (0, "ab")


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("search.vector_floor_rank=1", "search.vector_floor_rank"),
        ("search.vector_floor_rank=-5", "search.vector_floor_rank"),
        ("search.interleave_pattern=aa", "search.interleave_pattern"),
        ("search.interleave_pattern=abx", "search.interleave_pattern"),
    ],
)
def test_a_bad_setting_is_a_config_error_naming_its_key(override: str, key: str) -> None:
    from reme_core.errors import ConfigError
    from reme_core.settings import load_settings

    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        load_settings(overrides=[override], env={})
