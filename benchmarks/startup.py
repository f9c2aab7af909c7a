"""How long `reme --help` and friends take to start, beside baselines measured in the same run.

    python benchmarks/startup.py [--runs 20] [--baseline-src DIR]

    # DIR: an older source tree of this project, e.g. the last one before the lazy CLI:
    git archive 8297b13 reme_core reme_plugins | tar -x -C DIR

Every figure is a fresh interpreter running what the `reme` console script runs (`from
reme_core.cli import main; main()`) with the command's arguments, from a scratch folder; the
seconds are wall time around the whole process, median and min over ``--runs``. The sides run in
turn within each round, so machine noise hits them alike:

- ``python``: `python -c pass`, the floor any Python command pays;
- ``before``: the ``--baseline-src`` tree on PYTHONPATH (its plugins: the installed ones);
- ``reme``: this tree, its remembered plugin listing in place (one untimed `reme --help` first:
  any run after the first after an install);
- ``reme cold``: this tree with no listing remembered (a new XDG_CACHE_HOME each run: the first
  help screen after installing or editing a plugin loads every plugin to list their commands).

Ratios are against ``before`` (when given) and ``python``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MAIN = "from reme_core.cli import main; main()"
COMMANDS = [["--help"], ["--version"], ["bench", "--help"], ["search", "--help"]]


def timed(args: list[str], env: dict[str, str], cwd: str) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, *args], env=env, cwd=cwd, capture_output=True, text=True, check=False
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{args} failed ({done.returncode}): {done.stderr[-2000:]}")
    return elapsed


def measure(runs: int, baseline: Path | None) -> list[dict]:
    scratch = Path(tempfile.mkdtemp(prefix="reme-startup-"))
    try:
        return _measure(runs, baseline, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _measure(runs: int, baseline: Path | None, scratch: Path) -> list[dict]:
    plain = {k: v for k, v in os.environ.items() if not k.startswith("REME_")}
    warm = {**plain, "XDG_CACHE_HOME": str(scratch / "warm-cache")}
    timed(["-c", MAIN, "--help"], warm, str(scratch))  # remember the plugin listing
    sides: dict[str, dict[str, str] | None] = {}  # None: a new cache folder each run
    if baseline is not None:
        sides["before"] = {**plain, "PYTHONPATH": str(baseline.resolve())}
        check_baseline(baseline, sides["before"], str(scratch))
    sides["reme"] = warm
    sides["reme cold"] = None
    rows = []
    for command in COMMANDS:
        seconds: dict[str, list[float]] = {"python": [], **{side: [] for side in sides}}
        for run in range(runs):
            seconds["python"].append(timed(["-c", "pass"], plain, str(scratch)))
            for side, env in sides.items():
                if env is None:
                    if command != ["--help"]:
                        continue  # only a help screen lists plugin commands
                    env = {**plain, "XDG_CACHE_HOME": str(scratch / f"cold-{run}")}
                seconds[side].append(timed(["-c", MAIN, *command], env, str(scratch)))
        rows += [
            {
                "command": " ".join(command),
                "side": side,
                "median_s": statistics.median(values),
                "min_s": min(values),
                "runs": len(values),
            }
            for side, values in seconds.items()
            if values
        ]
    return rows


def check_baseline(baseline: Path, env: dict[str, str], cwd: str) -> None:
    """The baseline side must import the baseline's reme_core, not this tree's."""
    found = subprocess.run(
        [sys.executable, "-c", "import reme_core; print(reme_core.__file__)"],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if not Path(found).resolve().is_relative_to(baseline.resolve()):
        raise SystemExit(f"--baseline-src: reme_core comes from {found}, not {baseline}")


def print_table(rows: list[dict]) -> None:
    print(
        f"{'command':<14} {'side':<10} {'median s':>9} {'min s':>7} {'vs before':>10} "
        f"{'vs python':>10}"
    )
    for row in rows:
        same = {r["side"]: r for r in rows if r["command"] == row["command"]}
        before = same.get("before")
        vs_before = f"{row['median_s'] / before['median_s']:.2f}x" if before else "-"
        vs_python = f"{row['median_s'] / same['python']['median_s']:.2f}x"
        print(
            f"{row['command']:<14} {row['side']:<10} {row['median_s']:>9.3f} {row['min_s']:>7.3f} "
            f"{vs_before:>10} {vs_python:>10}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="fresh processes per command and side")
    parser.add_argument(
        "--baseline-src", type=Path, help="an older source tree of this project to measure too"
    )
    parser.add_argument("--json", action="store_true", help="print the rows as JSON too")
    args = parser.parse_args()
    rows = measure(args.runs, args.baseline_src)
    print(f"reme start-up: {args.runs} fresh processes per figure, {sys.executable}")
    print_table(rows)
    if args.json:
        print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
