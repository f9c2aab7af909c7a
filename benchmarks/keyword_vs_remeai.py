"""reme's keyword-only search and its defaults beside ReMe 0.4.2 (PyPI `reme-ai==0.4.2.0`), on the
same synthetic workspaces.

    python benchmarks/keyword_vs_remeai.py --sizes 1000 10000 --remeai-python /tmp/remeai/bin/python
        [--defaults-sizes 1000]  # sizes that also measure reme's defaults (hybrid e5-onnx + zvec)
        [--baseline-src DIR]   # also measure an older checkout of this project (e.g. `git archive`)

Sides: ``reme`` is keyword-only (components.embedding and file_store null), ``defaults`` is reme
as a user gets it (hybrid: e5-onnx + zvec, convex fusion, link expansion), ``remeai`` is ReMe as
its default config ships. Like with like: ReMe's default ``search`` job is hybrid in name (vector +
BM25, RRF) but its embedding store is commented out of the default config (it needs a hosted
embedding API, text-embedding-v4 by default), so out of the box its vector arm returns nothing and
it searches BM25 only. ``reme`` vs ``remeai`` compares keyword search with keyword search;
``defaults`` vs ``remeai`` compares each project's out-of-the-box search (reme's does more: a
local embedding per query). The defaults side starts from the benchmarks' shared vector cache
(``~/.cache/reme/bench-vectors.sqlite3``, added to after the run), so its build embeds only
chunks no earlier run embedded: its build figure is not a cold build.

ReMe runs in its own virtual environment (`python -m venv /tmp/remeai && /tmp/remeai/bin/pip
install 'reme-ai[as]==0.4.2.0'`: its step classes import agentscope; nothing pulls torch) through
benchmarks/remeai_driver.py. Both sides index a copy of the same workspace (daily/, digest/,
resource/ notes from benchmarks/synthetic.py), keyword-only: reme with components.embedding and
components.file_store null, ReMe as its default config ships (no embedding store). Every figure
comes from fresh processes of this run, so machine noise hits all sides alike:

- build: open + full index + close, from a fresh process; state: bytes under .reme/ (reme) and
  metadata/ (ReMe) after close;
- import, open: a fresh process importing the library, then opening the indexed workspace;
  first search: the first query after that open (what a CLI call pays);
- p50/p95 over every planted fact's query, three times, after 20 warm-up queries: `search` is the
  default search with one hop of link expansion (reme `Reme.search(q, limit=5)`, keyword-only or
  hybrid by side; ReMe's `search` step, keyword arm only, expand_links), `keyword` is the same
  without expansion (reme `expand=False`; ReMe's `bm25_search` step); recall@5 counts the planted
  answer note;
- no-op index: `Reme.index()` (reme) / the `index_update` job (ReMe) with nothing changed: the
  median of NOOP_RUNS passes after the searches, and (`noop_index_fresh_s`) the median of one
  pass in each of NOOP_RUNS fresh processes, as a `reme index` run pays it (after opening).

Ratios are reme / ReMe: below 1 is faster or smaller.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from synthetic import generate_workspace  # noqa: E402

KEYWORD_ONLY = ["components.embedding=null", "components.file_store=null"]
CONFIGS: dict[str, list[str]] = {"keyword": KEYWORD_ONLY, "defaults": []}
"""A side's config -> its overrides (``defaults``: none, what ``reme`` ships)."""
SHARED_VECTORS = Path(
    os.environ.get("REME_BENCH_VECTORS")
    or Path.home() / ".cache" / "reme" / "bench-vectors.sqlite3"
)
"""The shared vector cache the defaults side starts from and adds to; $REME_BENCH_VECTORS: another
file (a copy, so that a run leaves the shared one as it was)."""
NOOP_RUNS = 5
"""No-op index passes timed per side (one is at the mercy of a noisy machine)."""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def state_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in (root / ".reme").rglob("*") if p.is_file())


# -- reme (this project), each mode in a fresh process -----------------------------------------


def child_build(workspace: Path, config: str) -> dict:
    if config == "defaults":
        from reme_core.bench import vector_cache

        vector_cache.seed(workspace, SHARED_VECTORS)
    started = time.perf_counter()
    from reme_core.runtime import Reme

    reme = Reme.open(workspace, overrides=CONFIGS[config])
    reme.index()
    chunks = reme.catalog.counts()["chunks"]
    reme.close()
    return {
        "build_s": time.perf_counter() - started,
        "chunks": chunks,
        "state_bytes": state_bytes(workspace),
    }


def child_query(workspace: Path, config: str, queries: list[dict]) -> dict:
    started = time.perf_counter()
    from reme_core.runtime import Reme

    imported = time.perf_counter()
    reme = Reme.open(workspace, overrides=CONFIGS[config])
    opened = time.perf_counter()
    reme.search(queries[0]["query"], limit=5)
    first = time.perf_counter()
    out: dict = {
        "import_s": imported - started,
        "open_s": opened - imported,
        "first_search_s": first - opened,
    }
    for name, expand in (("search", True), ("keyword", False)):
        for q in queries[:20]:
            reme.search(q["query"], limit=5, expand=expand)
        latencies, hits = [], 0
        for _ in range(3):
            for q in queries:
                t0 = time.perf_counter()
                reme.search(q["query"], limit=5, expand=expand)
                latencies.append(time.perf_counter() - t0)
        for q in queries:
            paths = [h.path for h in reme.search(q["query"], limit=5, expand=expand).hits]
            hits += q["answer_path"] in paths
        out[name] = {
            "p50_ms": percentile(latencies, 0.5) * 1000,
            "p95_ms": percentile(latencies, 0.95) * 1000,
            "recall_at_5": hits / len(queries),
        }
    noop = []
    for _ in range(NOOP_RUNS):
        t0 = time.perf_counter()
        reme.index()
        noop.append(time.perf_counter() - t0)
    out["noop_index_s"] = percentile(noop, 0.5)
    reme.close()
    if config == "defaults":
        from reme_core.bench import vector_cache

        vector_cache.harvest(workspace, SHARED_VECTORS)
    return out


def child_noop(workspace: Path, config: str) -> dict:
    from reme_core.runtime import Reme

    reme = Reme.open(workspace, overrides=CONFIGS[config])
    t0 = time.perf_counter()
    reme.index()
    elapsed = time.perf_counter() - t0
    reme.close()
    return {"noop_index_s": elapsed}


# -- the run -----------------------------------------------------------------------------------


def run_child(python: str, args: list[str], env_path: str | None = None) -> dict:
    env = dict(os.environ)
    if env_path:
        env["PYTHONPATH"] = env_path + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run(
        [python, *args],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        cwd=tempfile.gettempdir(),
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def side_child(side: tuple, mode: str, *rest: str) -> dict:
    """Run one side's ``mode`` in a fresh process: this script's child, or the ReMe driver."""
    python, script, ws, src, config = side
    if script != Path(__file__):  # the ReMe driver: MODE WORKSPACE [QUERIES]
        return run_child(python, [str(script), mode, str(ws), *rest], src)
    return run_child(python, [str(script), "--child", mode, str(ws), config, *rest], src)


def measure_size(size: int, seed: int, args: argparse.Namespace) -> dict:
    work = Path(tempfile.mkdtemp(prefix=f"reme-vs-remeai-{size}-"))
    try:
        source = work / "source"
        facts = generate_workspace(source, size, seed=seed)
        queries = work / "queries.json"
        queries.write_text(json.dumps([asdict(f) for f in facts]), encoding="utf-8")
        sides: dict[str, dict] = {}
        me = Path(__file__)
        plan = [("reme", sys.executable, me, None, "keyword")]
        if args.baseline_src:
            plan.append(("before", sys.executable, me, args.baseline_src, "keyword"))
        if size in args.defaults_sizes:
            plan.append(("defaults", sys.executable, me, None, "defaults"))
        plan.append(("remeai", args.remeai_python, HERE / "remeai_driver.py", None, ""))
        for name, python, script, src, config in plan:
            ws = work / name
            shutil.copytree(source, ws)
            # Files settled for longer than the stat check's racy window (2 s), as between edits.
            time.sleep(2.5)

            side = (python, script, ws, src, config)
            build = side_child(side, "build")
            query = side_child(side, "query", str(queries))
            fresh = [side_child(side, "noop")["noop_index_s"] for _ in range(NOOP_RUNS)]
            sides[name] = {**build, **query, "noop_index_fresh_s": percentile(fresh, 0.5)}
        return {"notes": size, "facts": len(facts), **sides}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "-"


def print_table(rows: list[dict]) -> None:
    ours = ("reme", "before", "defaults")
    print(
        f"{'notes':>6} {'side':<7} {'chunks':>7} {'build s':>8} {'state MB':>9} {'import s':>9} "
        f"{'open s':>7} {'1st q s':>8} {'search p50':>11} {'p95':>6} {'kw p50':>7} {'p95':>6} "
        f"{'R@5':>5} {'no-op idx s':>11} {'fresh':>6}"
    )
    for r in rows:
        sides = [s for s in ours if s in r]
        for side in [*sides, "remeai"]:
            s = r[side]
            kw = s.get("keyword") or s["bm25_search"]
            print(
                f"{r['notes']:>6} {side:<7} {s['chunks']:>7} {s['build_s']:>8.2f} "
                f"{s['state_bytes'] / 1e6:>9.1f} {s['import_s']:>9.3f} {s['open_s']:>7.3f} "
                f"{s['first_search_s']:>8.3f} {s['search']['p50_ms']:>11.3f} "
                f"{s['search']['p95_ms']:>6.2f} {kw['p50_ms']:>7.3f} {kw['p95_ms']:>6.2f} "
                f"{s['search']['recall_at_5']:>5.2f} {s['noop_index_s']:>11.3f} "
                f"{s['noop_index_fresh_s']:>6.3f}"
            )
        for side in sides:
            s, o = r[side], r["remeai"]
            print(
                f"{r['notes']:>6} {side + '/R':<7} {'':>7} {_ratio(s['build_s'], o['build_s']):>8} "
                f"{_ratio(s['state_bytes'], o['state_bytes']):>9} "
                f"{_ratio(s['import_s'], o['import_s']):>9} {_ratio(s['open_s'], o['open_s']):>7} "
                f"{_ratio(s['first_search_s'], o['first_search_s']):>8} "
                f"{_ratio(s['search']['p50_ms'], o['search']['p50_ms']):>11} "
                f"{_ratio(s['search']['p95_ms'], o['search']['p95_ms']):>6} "
                f"{_ratio(s['keyword']['p50_ms'], o['bm25_search']['p50_ms']):>7} "
                f"{_ratio(s['keyword']['p95_ms'], o['bm25_search']['p95_ms']):>6} {'':>5} "
                f"{_ratio(s['noop_index_s'], o['noop_index_s']):>11} "
                f"{_ratio(s['noop_index_fresh_s'], o['noop_index_fresh_s']):>6}"
            )
    print(
        "side: reme = this tree keyword-only, before = --baseline-src keyword-only, defaults = "
        "this tree as shipped (hybrid e5-onnx + zvec), remeai = ReMe "
        f"{rows[0]['remeai'].get('version', '?')} as shipped (BM25 only: its default config has no"
    )
    print(
        "embedding store); X/R rows are ratios to ReMe (below 1: faster or smaller). search = "
        "default search with link expansion (ReMe: its search step), kw = the same search without"
    )
    print(
        "expansion (reme keyword-only: keyword; defaults: hybrid; ReMe: its bm25_search step); "
        "p50/p95 in ms; defaults' build starts from the shared vector cache."
    )
    print(
        "R@5 counts the planted facts' notes with search; 1st q = first search after open; no-op idx = "
        f"median of {NOOP_RUNS} no-op index passes, fresh = of one in each of {NOOP_RUNS} new "
        "processes."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument(
        "--defaults-sizes",
        type=int,
        nargs="*",
        default=[1000],
        help="sizes that also measure reme's defaults (hybrid: embeds what the cache lacks)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--remeai-python", help="python of a venv with reme-ai==0.4.2.0")
    parser.add_argument(
        "--baseline-src", help="an older source tree of this project to measure too"
    )
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        mode, workspace, config = args.child[0], Path(args.child[1]), args.child[2]
        if mode == "build":
            print(json.dumps(child_build(workspace, config)))
        elif mode == "noop":
            print(json.dumps(child_noop(workspace, config)))
        else:
            queries = json.loads(Path(args.child[3]).read_text(encoding="utf-8"))
            print(json.dumps(child_query(workspace, config, queries)))
        return
    if not args.remeai_python:
        parser.error("--remeai-python is required (a venv with reme-ai==0.4.2.0 installed)")
    rows = [measure_size(size, args.seed, args) for size in args.sizes]
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2), encoding="utf-8")
    print_table(rows)


if __name__ == "__main__":
    main()
