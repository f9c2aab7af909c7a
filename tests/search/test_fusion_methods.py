"""The fusion methods (search.fusion): ordering, 0..1 scores, and their distinguishing rules."""

from __future__ import annotations

import pytest

from reme_core.search.fusion import FUSION_METHODS, fuse, keyword_evidence

WEIGHTS = {"keyword": 0.5, "vector": 0.5}


@pytest.mark.parametrize("method", FUSION_METHODS)
def test_top_of_every_arm_scores_one_and_scores_stay_in_range(method: str) -> None:
    results = {
        "keyword": [("a", 9.0), ("b", 4.0), ("c", 1.0)],
        "vector": [("a", 0.9), ("c", 0.8), ("d", 0.2)],
    }
    fused = fuse(results, WEIGHTS, method=method)  # type: ignore[arg-type]
    assert fused[0].chunk_id == "a" and fused[0].score == pytest.approx(1.0)
    assert all(0.0 <= f.score <= 1.0 for f in fused)
    assert [f.score for f in fused] == sorted((f.score for f in fused), reverse=True)
    assert {f.chunk_id for f in fused} == {"a", "b", "c", "d"}
    assert fused[0].ranks == {"keyword": 1, "vector": 1}


@pytest.mark.parametrize("method", FUSION_METHODS)
def test_one_arm_alone_keeps_its_order(method: str) -> None:
    fused = fuse({"keyword": [("a", 3.0), ("b", 2.0), ("c", 1.0)]}, WEIGHTS, method=method)  # type: ignore[arg-type]
    assert [f.chunk_id for f in fused] == ["a", "b", "c"] and fused[0].score == 1.0


def test_convex_uses_score_gaps_that_rrf_ignores() -> None:
    # Keyword: x is far ahead of y; vector: y barely ahead of x. RRF ties them (ranks 1+2 each);
    # the convex sum sees the keyword gap and puts x first.
    others = [(f"o{i}", 0.5 - i / 100) for i in range(20)]  # a real candidate list's spread
    results = {"keyword": [("x", 10.0), ("y", 1.0)], "vector": [("y", 0.81), ("x", 0.80), *others]}
    rrf = fuse(results, WEIGHTS, method="rrf")
    assert rrf[0].score == pytest.approx(rrf[1].score)
    convex = fuse(results, WEIGHTS, method="convex")
    assert [f.chunk_id for f in convex][:2] == ["x", "y"]


def test_adaptive_trusts_a_clear_keyword_winner_more_than_rrf_does() -> None:
    keyword = [("exact", 20.0), *((f"k{i}", 2.0) for i in range(9))]
    vector = [*((f"v{i}", 0.9 - i / 100) for i in range(5)), ("exact", 0.5)]
    results = {"keyword": keyword, "vector": vector}
    assert keyword_evidence(keyword) == pytest.approx(0.9)
    rrf_order = [f.chunk_id for f in fuse(results, WEIGHTS, method="rrf")]
    adaptive_order = [f.chunk_id for f in fuse(results, WEIGHTS, method="adaptive")]
    assert adaptive_order[0] == "exact" and adaptive_order.index("v0") > rrf_order.index("v0")


def test_adaptive_leans_on_vectors_when_keywords_found_nothing_clear() -> None:
    flat = [(f"k{i}", 1.0) for i in range(10)]
    assert keyword_evidence(flat) == 0.0 and keyword_evidence([]) == 0.0
    results = {"keyword": flat, "vector": [("v", 0.9)]}
    assert fuse(results, WEIGHTS, method="adaptive")[0].chunk_id in {"v", "k0"}


def test_rerank_keeps_keyword_candidates_first_and_answers_paraphrases() -> None:
    results = {
        "keyword": [("a", 5.0), ("b", 4.0)],
        "vector": [("z", 0.95), ("b", 0.9), ("a", 0.1)],
    }
    order = [f.chunk_id for f in fuse(results, WEIGHTS, method="rerank")]
    assert order[:2] == ["b", "a"] and order[2] == "z"  # reordered by both arms; z after
    paraphrase = {"keyword": [], "vector": [("z", 0.95), ("y", 0.5)]}
    assert [f.chunk_id for f in fuse(paraphrase, WEIGHTS, method="rerank")] == ["z", "y"]


def test_unknown_method_is_a_config_error() -> None:
    from reme_core.errors import ConfigError
    from reme_core.settings import load_settings

    with pytest.raises(ConfigError, match=r"search\.fusion"):
        load_settings(overrides=["search.fusion=magic"], env={})


def test_widened_doubles_the_vector_share_and_caps_it() -> None:
    from reme_core.search.fusion import widened

    assert widened({"keyword": 0.75, "vector": 0.25}, ["keyword", "vector"]) == pytest.approx(
        {"keyword": 0.5, "vector": 0.5}
    )
    assert widened({"keyword": 0.4, "vector": 0.6}, ["keyword", "vector"]) == pytest.approx(
        {"keyword": 0.0, "vector": 1.0}
    )
    assert widened({"keyword": 0.75, "vector": 0.25}, ["keyword"]) is None  # vectors did not run
    assert widened({"keyword": 0.0, "vector": 1.0}, ["keyword", "vector"]) is None
    with pytest.raises(ValueError, match="factor"):
        widened({"keyword": 0.75, "vector": 0.25}, ["keyword", "vector"], factor=0)


def test_interleave_takes_the_keyword_leaning_and_the_meaning_leaning_ranking_in_turn() -> None:
    # At vector weight 0.25 the vector-only find v sits fourth, below three keyword matches; at
    # 0.5 it is second. Interleaved: the keyword-leaning first (k1), then the meaning-leaning
    # ranking's first not yet taken (v), then k2 from the keyword-leaning one, and so on.
    results = {
        "keyword": [("k1", 10.0), ("k2", 4.0), ("k3", 3.0), ("k4", 2.0)],
        "vector": [("v", 0.9), ("k1", 0.8), ("k2", 0.5), ("k3", 0.46), ("k4", 0.4)],
    }
    weights = {"keyword": 0.75, "vector": 0.25}
    narrow = [f.chunk_id for f in fuse(results, weights, method="convex")]
    wide = [f.chunk_id for f in fuse(results, {"keyword": 0.5, "vector": 0.5}, method="convex")]
    assert narrow == ["k1", "k2", "k3", "v", "k4"] and wide == ["k1", "v", "k2", "k3", "k4"]
    fused = fuse(results, weights, method="interleave")
    assert [f.chunk_id for f in fused] == ["k1", "v", "k2", "k3", "k4"]
    assert [f.score for f in fused] == sorted((f.score for f in fused), reverse=True)
    assert fused[0].score == pytest.approx(0.95)  # k1's convex score at 0.25
    assert fused[1].score == pytest.approx(0.5) and fused[1].ranks == {"vector": 1}
    assert fused[2].score == pytest.approx(0.35)  # k2 at 0.25, below v's 0.5 already


def test_interleave_is_convex_when_only_one_arm_ran() -> None:
    results = {"vector": [("a", 0.9), ("b", 0.5), ("c", 0.1)]}
    weights = {"keyword": 0.75, "vector": 0.25}
    interleaved = fuse(results, weights, method="interleave")
    convex = fuse(results, weights, method="convex")
    assert [(f.chunk_id, f.score) for f in interleaved] == [(f.chunk_id, f.score) for f in convex]


def test_fuse_names_the_known_methods_for_an_unknown_one() -> None:
    with pytest.raises(ValueError, match="interleave"):
        fuse({"keyword": [("a", 1.0)]}, WEIGHTS, method="magic")  # type: ignore[arg-type]


def test_settings_accept_interleave() -> None:
    from reme_core.settings import load_settings

    assert load_settings(overrides=["search.fusion=interleave"], env={}).search.fusion == (
        "interleave"
    )
