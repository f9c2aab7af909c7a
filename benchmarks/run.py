"""Foundation benchmarks: indexing, incremental update, search latency, peak RSS, recall@5.

Run with `tox -e bench` (or `python benchmarks/run.py --sizes 1000 10000`). Every figure is printed
beside a baseline measured in the same run:
- incremental update of one edited note vs a full rebuild (ratio),
- reme search latency and recall@5 vs a naive scan (read every note, rank by query-word overlap),
so machine noise affects both sides alike. Each size runs in its own process so peak RSS is its own.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
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

WORD = re.compile(r"\w+", re.UNICODE)
NAIVE_FACTS = 100


def naive_rank(root: Path, query: str, limit: int) -> list[str]:
    """Baseline: read every note, score by the number of query words it contains."""
    words = {w.lower() for w in WORD.findall(query) if len(w) > 2}
    scored = []
    for path in root.rglob("*.md"):
        if ".reme" in path.parts:
            continue
        text = path.read_text(encoding="utf-8").lower()
        score = sum(1 for w in words if w in text)
        if score:
            scored.append((score, path.relative_to(root).as_posix()))
    scored.sort(key=lambda s: (-s[0], s[1]))
    return [p for _, p in scored[:limit]]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def measure(size: int, seed: int, queries: int) -> dict:
    from reme_core.runtime import Reme

    work = Path(tempfile.mkdtemp(prefix=f"reme-bench-{size}-"))
    try:
        facts = generate_workspace(work, size, seed=seed)
        started = time.perf_counter()
        reme = Reme.open(work)
        reme.index()
        full_index_s = time.perf_counter() - started
        chunks = reme.catalog.counts()["chunks"]

        # One edited note: through the API (indexes before returning) vs rebuilding everything.
        target = facts[0].answer_path
        incremental = []
        for i in range(5):
            t0 = time.perf_counter()
            reme.files.write(target, (work / target).read_text(encoding="utf-8") + f"\nEdit {i}.\n")
            incremental.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        reme.reindex()
        rebuild_s = time.perf_counter() - t0

        planted = [(f.query, f.answer_path) for f in facts]
        workload = (planted * (queries // max(1, len(planted)) + 1))[:queries]
        latencies, hits_at5 = [], 0
        for query, _ in workload:
            t0 = time.perf_counter()
            reme.search(query, limit=5)
            latencies.append(time.perf_counter() - t0)
        found = []
        for query, answer in planted:
            found.append(answer in [h.path for h in reme.search(query, limit=5).hits])
        hits_at5 = sum(found)
        reme.close()

        # The naive scan is slow at 10k notes, so it answers the first NAIVE_FACTS facts only;
        # reme's recall on that same subset is printed beside it.
        subset = planted[:NAIVE_FACTS]
        naive_latencies, naive_hits = [], 0
        for query, answer in subset:
            t0 = time.perf_counter()
            ranked = naive_rank(work, query, 5)
            naive_latencies.append(time.perf_counter() - t0)
            naive_hits += answer in ranked
        return {
            "notes": size,
            "chunks": chunks,
            "full_index_s": full_index_s,
            "incremental_update_s": statistics.median(incremental),
            "full_rebuild_s": rebuild_s,
            "search_p50_ms": percentile(latencies, 0.5) * 1000,
            "search_p95_ms": percentile(latencies, 0.95) * 1000,
            "naive_p50_ms": percentile(naive_latencies, 0.5) * 1000,
            "recall_at_5": hits_at5 / len(planted),
            "subset": len(subset),
            "subset_recall_at_5": sum(found[: len(subset)]) / len(subset),
            "naive_recall_at_5": naive_hits / len(subset),
            "facts": len(planted),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, args.seed, args.queries)))
        return
    rows = []
    for size in args.sizes:
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                "--child",
                str(size),
                "--seed",
                str(args.seed),
                "--queries",
                str(args.queries),
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(
        f"{'notes':>6} {'index s':>8} {'1 edit ms':>10} {'rebuild s':>10} {'ratio':>7} "
        f"{'p50 ms':>7} {'p95 ms':>7} {'naive p50':>10} {'speedup':>8} {'R@5 all':>8} "
        f"{'R@5 sub':>8} {'naive sub':>9} {'RSS MB':>7}"
    )
    for r in rows:
        print(
            f"{r['notes']:>6} {r['full_index_s']:>8.2f} {r['incremental_update_s'] * 1000:>10.1f} "
            f"{r['full_rebuild_s']:>10.2f} {r['full_rebuild_s'] / r['incremental_update_s']:>6.0f}x "
            f"{r['search_p50_ms']:>7.1f} {r['search_p95_ms']:>7.1f} {r['naive_p50_ms']:>10.1f} "
            f"{r['naive_p50_ms'] / r['search_p50_ms']:>7.0f}x {r['recall_at_5']:>8.2f} "
            f"{r['subset_recall_at_5']:>8.2f} {r['naive_recall_at_5']:>9.2f} {r['peak_rss_mb']:>7.0f}"
        )
    print(
        "ratio = full rebuild / one-note incremental update; speedup = naive scan p50 / reme p50;"
    )
    print(
        f"R@5 all = recall@5 over every planted fact; 'sub' columns = the first {NAIVE_FACTS} facts,"
    )
    print("answered by reme and by the naive scan (read every note, rank by query-word overlap).")


if __name__ == "__main__":
    main()
