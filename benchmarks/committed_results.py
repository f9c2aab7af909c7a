"""Rerun the benchmark results committed under plugins/*/results/ (``tox -e bench-results``).

Each committed comparison is rerun with the command its plugin's README names, into a scratch
folder, and its ``result.json`` / ``result.md`` files and ``compare.md`` replace the committed
ones. Run it in the ``bench-results`` tox env: there only reme, reme-lme, reme-beam and reme-locomo
are installed, so each result records exactly the plugins a user installs, and reme's own wheel
resolves back to this checkout (``reme_core.bench.install_sources``).

Usage (from the repository root; datasets are in ../shared/data beside the checkout)::

    tox -e bench-results                       # every committed result (about 25 min, 2 cores)
    tox -e bench-results -- --only beam        # one plugin's
    tox -e bench-results -- --vector-cache ~/.cache/reme/bench-vectors.sqlite3

``--vector-cache`` reuses embeddings from an earlier run (keyed by model and chunk content, so
the figures are the same; only the wall time differs).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

RUNS: dict[str, tuple[str, list[str]]] = {
    # plugin: (committed folder, `reme` arguments without --out), as the plugin's README says.
    "lme": (
        "plugins/lme/results/dev50-compare",
        [
            "bench",
            "lme",
            "compare",
            "../shared/data/longmemeval/longmemeval_s_dev50.json.gz",
            "--workers",
            "2",
        ],
    ),
    "beam": (
        "plugins/beam/results/dev-compare",
        [
            "bench",
            "beam",
            "compare",
            "../shared/data/beam/chats/100K",
            "--workers",
            "2",
            "--no-progress",
        ],
    ),
    "locomo": (
        "plugins/locomo/results/dev/locomo-dev2",
        [
            "bench",
            "locomo",
            "compare",
            "../shared/data/locomo/locomo_dev2.json",
            "--workers",
            "2",
            "--no-progress",
        ],
    ),
    "realtalk": (
        "plugins/locomo/results/dev/realtalk-dev",
        [
            "bench",
            "locomo",
            "compare",
            "../shared/data/realtalk",
            "--workers",
            "2",
            "--no-progress",
        ],
    ),
}
KEPT = ("result.json", "result.md")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(RUNS), action="append", help="rerun only these")
    parser.add_argument("--vector-cache", type=Path, help="an embedding cache to reuse")
    args = parser.parse_args(argv)
    reme = Path(sys.executable).with_name("reme")
    for name in args.only or list(RUNS):
        folder, command = RUNS[name]
        with tempfile.TemporaryDirectory(prefix=f"reme-results-{name}-") as scratch:
            out = Path(scratch) / "out"
            extra = ["--vector-cache", str(args.vector_cache)] if args.vector_cache else []
            full = [str(reme), *command, "--out", str(out), *extra]
            print("running:", " ".join(full[1:]), flush=True)
            done = subprocess.run(full, cwd=REPO, check=False)
            if done.returncode != 0:
                print(f"error: {name} failed (exit code {done.returncode})", file=sys.stderr)
                return done.returncode
            copy_results(out, REPO / folder)
            print(f"updated {folder}", flush=True)
    return 0


def copy_results(out: Path, target: Path) -> None:
    """Replace ``target``'s per-config folders and compare.md with those of the run in ``out``
    (item rows and caches stay behind)."""
    runs = sorted(p.parent for p in out.glob("*/result.json"))
    if not runs:
        raise SystemExit(f"error: no result.json under {out}")
    if target.exists():
        shutil.rmtree(target)
    for run in runs:
        (target / run.name).mkdir(parents=True)
        for kept in KEPT:
            shutil.copy2(run / kept, target / run.name / kept)
    if (out / "compare.md").exists():
        shutil.copy2(out / "compare.md", target / "compare.md")


if __name__ == "__main__":
    raise SystemExit(main())
