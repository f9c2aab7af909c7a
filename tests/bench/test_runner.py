"""The parallel, resumable item runner."""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path

import pytest

from reme_core.bench import item_path, run_items, select_items
from tests.bench.workers import counting, square

ITEMS = [{"id": f"q{i}", "cat": "a" if i % 2 else "b", "x": i} for i in range(5)]


def test_select_by_ids_then_limit_and_unknown_ids_fail() -> None:
    assert [i["id"] for i in select_items(ITEMS, ids=["q3", "q1", "q4"], limit=2)] == ["q1", "q3"]
    assert [i["id"] for i in select_items(ITEMS, limit=2)] == ["q0", "q1"]
    with pytest.raises(ValueError, match="q9"):
        select_items(ITEMS, ids=["q1", "q9"])


def test_rows_in_data_order_with_a_file_each(tmp_path: Path) -> None:
    rows = run_items(ITEMS, square, out_dir=tmp_path, workers=1, progress=False)
    assert [r["id"] for r in rows] == ["q0", "q1", "q2", "q3", "q4"]
    assert [r["metrics"]["value"] for r in rows] == [0, 1, 4, 9, 16]
    assert all(r["error"] is None and r["seconds"] >= 0 for r in rows)
    saved = json.loads(item_path(tmp_path, "q3").read_text())
    assert saved["metrics"] == {"value": 9}


def test_processes_run_the_items(tmp_path: Path) -> None:
    rows = run_items(ITEMS[:3], square, out_dir=tmp_path, workers=2, progress=False)
    assert [r["metrics"]["value"] for r in rows] == [0, 1, 4]
    assert all(r["pid"] != os.getpid() for r in rows)


def test_a_failure_is_recorded_and_retried_on_resume(tmp_path: Path) -> None:
    log = tmp_path / "ran.txt"
    items = [*ITEMS[:3], {"id": "bad", "cat": "a", "x": 0, "fail": True}]
    worker = functools.partial(counting, log=str(log))
    rows = run_items(items, worker, out_dir=tmp_path / "out", workers=1, progress=False)
    assert (
        rows[3]["error"] == "ValueError: cannot score bad" and "Traceback" in rows[3]["traceback"]
    )
    assert rows[2]["error"] is None  # the run went on

    items[3] = {"id": "bad", "cat": "a", "x": 7}  # fixed: the rerun retries only it
    log.write_text("")
    rows = run_items(items, worker, out_dir=tmp_path / "out", workers=1, progress=False)
    assert log.read_text().split() == ["bad"]
    assert rows[3]["metrics"] == {"value": 49} and rows[3]["error"] is None


def test_unsafe_ids_become_distinct_file_names(tmp_path: Path) -> None:
    items = [{"id": "100K/1", "cat": "a", "x": 1}, {"id": "100K_1", "cat": "a", "x": 2}]
    rows = run_items(items, square, out_dir=tmp_path, workers=1, progress=False)
    assert [r["id"] for r in rows] == ["100K/1", "100K_1"]
    assert item_path(tmp_path, "100K/1") != item_path(tmp_path, "100K_1")
    assert len(list((tmp_path / "items").glob("*.json"))) == 2


def test_progress_off_a_terminal_is_plain_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    # Under pytest stderr is not a terminal, as in a CI log or `2> run.log`.
    run_items(ITEMS, square, out_dir=tmp_path, workers=1, progress=True, desc="toy")
    lines = capsys.readouterr().err.splitlines()
    assert lines and all(line.startswith("toy: ") for line in lines)
    assert "\r" not in "".join(lines) and lines[-1].startswith(f"toy: {len(ITEMS)}/{len(ITEMS)} (")
