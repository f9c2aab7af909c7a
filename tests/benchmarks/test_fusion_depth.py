"""The depth harness: its rules are the search's settings, checked the same way, cut per arm."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import fusion_depth  # noqa: E402
import fusion_rules  # noqa: E402

ARMS = {
    "keyword": [("k1", 10.0), ("k2", 4.0), ("k3", 3.0), ("k4", 2.0)],
    "vector": [("v", 0.9), ("k1", 0.8), ("k2", 0.5), ("k3", 0.46), ("k4", 0.4)],
}


def test_rules_parse_and_bad_ones_are_refused() -> None:
    assert fusion_depth.parse_rule("interleave:0.2:50:aab") == ("interleave", 0.2, 50, "aab")
    assert fusion_depth.parse_rule("keyword")[0] == "keyword"
    for bad in ("convex:0.25:1:ab", "convex:0.25:0:aa", "magic:0.2:0:ab", "convex:1.5:0:ab",
                "convex:0.25"):  # fmt: skip
        with pytest.raises(ValueError):
            fusion_depth.parse_rule(bad)


def test_the_harness_interleave_without_a_floor_is_fusion_rules_own() -> None:
    rule = fusion_depth.parse_rule("interleave:0.25:0:aab")
    expected = fusion_rules.interleave(
        fusion_rules.convex(ARMS, 0.25), fusion_rules.convex(ARMS, 0.5), "aab"
    )
    assert fusion_depth.ranking(rule, ARMS, 200) == expected


def test_each_arm_is_cut_to_the_depth() -> None:
    keyword = fusion_depth.parse_rule("keyword")
    assert fusion_depth.ranking(keyword, ARMS, 2) == ["k1", "k2"]
    convex = fusion_depth.parse_rule("convex:0.5:0:ab")
    assert set(fusion_depth.ranking(convex, ARMS, 1)) == {"k1", "v"}
