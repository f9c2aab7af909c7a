"""The per-query fusion rule harness: its interleaving is the search's, its features are bounded."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import fusion_rules  # noqa: E402

from reme_core.search.fusion import fuse  # noqa: E402

ARMS = {
    "keyword": [("k1", 10.0), ("k2", 4.0), ("k3", 3.0), ("k4", 2.0)],
    "vector": [("v", 0.9), ("k1", 0.8), ("k2", 0.5), ("k3", 0.46), ("k4", 0.4)],
}


def test_its_interleave_at_one_and_two_quarters_is_the_search_method() -> None:
    harness = fusion_rules.interleave(
        fusion_rules.convex(ARMS, 0.25), fusion_rules.convex(ARMS, 0.5), "ab"
    )
    search = [
        f.chunk_id
        for f in fuse(ARMS, {"keyword": 0.75, "vector": 0.25}, method="interleave")  # type: ignore[arg-type]
    ]
    assert harness == search == ["k1", "v", "k2", "k3", "k4"]


def test_patterns_take_from_each_ranking_in_their_order() -> None:
    assert fusion_rules.interleave(["a", "b", "c"], ["x", "a", "y"], "aab") == [
        "a", "b", "x", "c", "y",
    ]  # fmt: skip
    assert fusion_rules.interleave([], ["x"], "ab") == ["x"]


def test_features_are_bounded_and_zero_without_keyword_hits() -> None:
    features = fusion_rules.features("what did Ana adopt", ARMS)
    assert features["kw_gap2"] == pytest.approx(0.6)
    assert features["vec_gap2"] == pytest.approx(0.1)
    assert 0.0 <= features["overlap10"] <= 1.0
    empty = fusion_rules.features("zzzxqv", {"keyword": [], "vector": ARMS["vector"]})
    assert empty["kw_top"] == 0.0 and empty["kw_gap10"] == 0.0
