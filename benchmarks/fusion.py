"""Fusion methods side by side on the synthetic workspace: keyword only, vector only, each method.

    python benchmarks/fusion.py --notes 1000 --embedding minilm-onnx [--weights 0.3,0.5,0.7]

The workspace is indexed once with the chosen embedding; each planted fact's query (keyword set)
and paraphrase (paraphrase set) is ranked once per arm over 200 candidates; then every fusion
method (reme_core.search.fusion.fuse, the code the search engine runs) is applied to the same
arm rankings, so the table differs only by fusion. Recall@k counts the note holding the fact
among the first k distinct notes. Keyword-only is the baseline every row is read against.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from synthetic import generate_workspace  # noqa: E402

from reme_core.search.fusion import FUSION_METHODS, fuse  # noqa: E402

CANDIDATES = 200


def note_order(chunk_ids: Sequence[str], path_of: dict[str, str]) -> list[str]:
    seen: dict[str, None] = {}
    for chunk_id in chunk_ids:
        path = path_of.get(chunk_id)
        if path is not None:
            seen.setdefault(path, None)
    return list(seen)


def recall(rows: list[tuple[list[str], str]], k: int) -> float:
    return sum(answer in ranked[:k] for ranked, answer in rows) / max(1, len(rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--notes", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--embedding", default=None, help="components.embedding name")
    parser.add_argument("--weights", default="0.3,0.5,0.7", help="vector weights to try")
    parser.add_argument("--k", type=int, default=5)
    args = parser.parse_args()

    from reme_core.runtime import Reme

    work = Path(tempfile.mkdtemp(prefix="reme-fusion-"))
    overrides = ["components.file_store.name=local"]
    if args.embedding:
        overrides.append(f"components.embedding.name={args.embedding}")
    try:
        facts = generate_workspace(work / "ws", args.notes, seed=args.seed)
        started = time.perf_counter()
        with Reme.open(work / "ws", overrides=overrides) as reme:
            reme.index()
            print(f"indexed {args.notes} notes in {time.perf_counter() - started:.0f} s")
            sets = {
                "keyword queries": [(f.query, f.answer_path) for f in facts],
                "paraphrases": [(f.paraphrase, f.answer_path) for f in facts if f.paraphrase],
            }
            arms = {
                name: [(reme.searcher.rank_arms(q, CANDIDATES), a) for q, a in queries]
                for name, queries in sets.items()
            }
            ids = {
                cid
                for rows in arms.values()
                for r, _ in rows
                for hits in r.values()
                for cid, _ in hits
            }
            path_of = {cid: chunk.path for cid, chunk in reme.catalog.chunks(list(ids)).items()}
    finally:
        shutil.rmtree(work, ignore_errors=True)

    weights = [float(w) for w in args.weights.split(",")]
    configs: list[tuple[str, str, float]] = [
        ("keyword only", "rrf", 0.0),
        ("vector only", "rrf", 1.0),
    ]
    configs += [(f"{m} w={w}", m, w) for m in FUSION_METHODS for w in weights]
    header = ["fusion", *(f"{name} r@{args.k}" for name in sets), "mean"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for label, method, weight in configs:
        arm_weights = {"keyword": 1.0 - weight, "vector": weight}
        scores = []
        for rows in arms.values():
            ranked = [
                (note_order([f.chunk_id for f in fuse(r, arm_weights, method=method)], path_of), a)  # type: ignore[arg-type]
                for r, a in rows
            ]
            scores.append(recall(ranked, args.k))
        mean = sum(scores) / len(scores)
        print(f"| {label} | " + " | ".join(f"{s:.3f}" for s in scores) + f" | {mean:.3f} |")


if __name__ == "__main__":
    main()
