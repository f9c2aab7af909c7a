"""Committed benchmark results stay true: `reme bench reproduce --dry-run` on each one finds this
checkout's plugins, config defaults and datasets as the run recorded them.

A change of a default, of a plugin's code or of a named config makes this fail until the result
is run again and recommitted (the recorded command is in the result's manifest). A result whose
dataset is not on this machine (../shared/data beside the checkout) is skipped, saying which.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from reme_core.bench.results import RunResult

REPO = Path(__file__).resolve().parents[2]
RESULTS = sorted(REPO.glob("plugins/*/results/**/result.json"))


def test_there_are_committed_results() -> None:
    assert {p.relative_to(REPO).parts[1] for p in RESULTS} >= {"lme", "beam"}


@pytest.mark.parametrize("result", RESULTS, ids=lambda p: str(p.relative_to(REPO).parent))
def test_a_committed_result_reproduces_here(result: Path) -> None:
    manifest = RunResult.read(result).manifest
    # Datasets are named relative to the checkout (../shared/data/...); output and cache folders
    # are absolute and need not exist.
    datasets = [a for a in manifest.command if "/" in a and not a.startswith(("-", "/"))]
    missing = [d for d in datasets if not (REPO / d).exists()]
    if missing:
        pytest.skip(f"dataset not on this machine: {missing[0]}")
    reme = Path(sys.executable).with_name("reme")
    done = subprocess.run(
        [str(reme), "bench", "reproduce", str(result), "--dry-run"],
        cwd=REPO,  # the recorded command names its dataset relative to the checkout
        env={k: v for k, v in os.environ.items() if not k.startswith("REME_")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, (
        f"{result.relative_to(REPO)} is stale: rerun `reme {' '.join(manifest.command)}` and "
        f"commit its result\n{done.stdout}{done.stderr}"
    )
    assert "manifest matches" in done.stdout
