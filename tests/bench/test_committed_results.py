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
    assert {p.relative_to(REPO).parts[1] for p in RESULTS} >= {"lme", "beam", "locomo"}


@pytest.mark.parametrize("result", RESULTS, ids=lambda p: str(p.relative_to(REPO).parent))
def test_a_committed_result_installs_elsewhere(result: Path) -> None:
    """Every recorded plugin says whether it took part and where another machine installs it
    from: no file: URL, no absolute path (of a temporary build folder or of this checkout)."""
    for pin in RunResult.read(result).manifest.plugins:
        assert pin.participated is not None, pin.distribution
        assert pin.install is not None, pin.distribution
        assert "file:" not in pin.install.requirement, pin.install.requirement
        assert not pin.install.requirement.startswith("/"), pin.install.requirement
        assert pin.source is None or "file:" not in (pin.source.url or ""), pin.source
    # Recorded with only what the plugin READMEs install (tox -e bench-results).
    names = {p.distribution for p in RunResult.read(result).manifest.plugins}
    assert names == {"reme", "reme-lme", "reme-beam", "reme-locomo"}


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
