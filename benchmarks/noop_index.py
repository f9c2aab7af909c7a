"""No-op `reme index` with and without the drift seal, keyword-only and with vectors.

    python benchmarks/noop_index.py --sizes 1000 10000 [--stores zvec local] [--runs 5]

For each size, one synthetic workspace (benchmarks/synthetic.py) per config, indexed and closed.
Then RUNS fresh processes each open it and time one no-op `Reme.index()` (what `reme index` pays
after opening): first as the last close left it ("sealed"), then with `.reme/drift-seal.json`
removed before each process ("unsealed": every projection's chunk ids compared with the catalog,
and a vector pass comparing the store with the catalog, as every pass did before the seal; see
reme_core/index/seal.py). The vector configs use the `hash` embedding, since a no-op embeds
nothing, with each store of --stores. Medians of the runs; the ratio is sealed / unsealed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from synthetic import generate_workspace  # noqa: E402

KEYWORD_ONLY = ["components.embedding=null", "components.file_store=null"]


def overrides(config: str) -> list[str]:
    if config == "keyword":
        return KEYWORD_ONLY
    return ["components.embedding.name=hash", f"components.file_store.name={config}"]


def child(mode: str, workspace: Path, config: str) -> dict:
    from reme_core.runtime import Reme

    if mode == "build":
        with Reme.open(workspace, overrides=overrides(config)) as reme:
            reme.index()
            reme.index()  # after embedding: checks in full once, then seals
        return {}
    reme = Reme.open(workspace, overrides=overrides(config))
    sealed = reme.indexer.seal_holds()
    t0 = time.perf_counter()
    reme.index()
    elapsed = time.perf_counter() - t0
    reme.close()
    return {"noop_s": elapsed, "sealed": sealed}


def run_child(mode: str, workspace: Path, config: str) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", mode, str(workspace), config],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(size: int, configs: list[str], runs: int, seed: int) -> list[dict]:
    work = Path(tempfile.mkdtemp(prefix=f"reme-noop-{size}-"))
    rows = []
    try:
        source = work / "source"
        generate_workspace(source, size, seed=seed)
        for config in configs:
            ws = work / config
            shutil.copytree(source, ws)
            time.sleep(2.5)  # the notes settle past the stat check's racy window, as between edits
            run_child("build", ws, config)
            sealed = [run_child("noop", ws, config) for _ in range(runs)]
            unsealed = []
            for _ in range(runs):
                (ws / ".reme" / "drift-seal.json").unlink(missing_ok=True)
                unsealed.append(run_child("noop", ws, config))
            rows.append(
                {
                    "notes": size,
                    "config": config,
                    "sealed_s": statistics.median(r["noop_s"] for r in sealed),
                    "seal_held": sum(r["sealed"] for r in sealed),
                    "unsealed_s": statistics.median(r["noop_s"] for r in unsealed),
                    "runs": runs,
                }
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--stores", nargs="+", default=["zvec"], help="vector stores to measure")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        mode, workspace, config = args.child
        print(json.dumps(child(mode, Path(workspace), config)))
        return
    configs = ["keyword", *args.stores]
    rows = [row for size in args.sizes for row in measure(size, configs, args.runs, args.seed)]
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2), encoding="utf-8")
    print(f"{'notes':>6} {'config':<9} {'sealed s':>9} {'held':>5} {'unsealed s':>11} {'ratio':>6}")
    for r in rows:
        print(
            f"{r['notes']:>6} {r['config']:<9} {r['sealed_s']:>9.3f} "
            f"{r['seal_held']:>2}/{r['runs']:<2} {r['unsealed_s']:>11.3f} "
            f"{r['sealed_s'] / r['unsealed_s']:>5.2f}x"
        )
    print(
        "no-op `Reme.index()` in a fresh process, median of the runs; held = runs that found the "
        "seal intact;\nunsealed = the seal removed first (the full comparison, as before it); "
        "vector configs use the hash embedding."
    )


if __name__ == "__main__":
    main()
