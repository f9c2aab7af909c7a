"""Aggregation, the Markdown table and the result file round trip."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from reme_core.bench import Manifest, RunResult, aggregate, side_by_side

ROWS = [
    {"id": "a", "category": "x", "metrics": {"r@1": 1.0, "t@1": 0.0}, "usage": {"calls": 2}},
    {"id": "b", "category": "x", "metrics": {"r@1": 0.0, "t@1": math.nan}, "usage": {"calls": 1}},
    {"id": "c", "category": "y", "metrics": {"r@1": 1.0}, "usage": {"cache_hits": 3}},
    {"id": "d", "category": "y", "error": "ValueError: boom"},
]


def test_aggregate_means_over_items_that_have_the_metric() -> None:
    categories, overall = aggregate(ROWS)
    assert categories["x"] == {"r@1": 0.5, "t@1": 0.0, "n": 2.0}
    assert categories["y"] == {"r@1": 1.0, "n": 1.0}  # the failed item is not scored
    assert overall == {"r@1": pytest.approx(2 / 3), "t@1": 0.0, "n": 3.0}


def test_result_counts_usage_and_failures_and_round_trips(tmp_path: Path) -> None:
    result = RunResult.from_items("toy", Manifest(config_name="bm25"), ROWS, seconds=2.5)
    assert result.usage.calls == 3 and result.usage.cache_hits == 3
    assert result.failed == ["d"]
    path = result.save(tmp_path / "out")
    assert (tmp_path / "out" / "result.md").is_file()
    again = RunResult.read(tmp_path / "out")
    assert again.overall == result.overall and again.manifest.config_name == "bm25"
    assert path == tmp_path / "out" / "result.json"


def test_markdown_has_a_row_per_category_and_overall() -> None:
    text = RunResult.from_items("toy", Manifest(config_name="bm25"), ROWS).markdown(["r@1"])
    assert "## toy: bm25" in text
    assert "| x | 0.500 | 2 |" in text
    assert "| y | 1.000 | 1 |" in text
    assert "| overall | 0.667 | 3 |" in text
    assert "1 failed" in text


def test_side_by_side_puts_runs_in_rows() -> None:
    a = RunResult.from_items("toy", Manifest(), ROWS[:1])
    b = RunResult.from_items("toy", Manifest(), ROWS[1:2])
    table = side_by_side({"bm25": a, "hybrid": b}, ["r@1", "t@1"])
    assert "| bm25 | 1.000 | 0.000 | 1 |" in table
    assert "| hybrid | 0.000 | - | 1 |" in table
