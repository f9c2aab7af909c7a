"""Fusion levers side by side on every dev set at k = 5, 10, 20, against keyword-only.

    python benchmarks/fusion_levers.py [--cache DIR] [--sets locomo,realtalk,...]

Every set's rankings come from benchmarks/fusion_sets.py (built once, then cached), so each row
differs only by how the same arm rankings are fused: keyword only, vector only, and every
method of reme_core.search.fusion (the code the search engine runs) at a few weights. Cells are
the set's metric (turn or note recall@k; recall_all@k for LongMemEval); ``worst`` is the row's
worst difference from keyword-only over every set and k, the number fusion must keep >= 0.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from fusion_sets import Row, load_sets  # noqa: E402

from reme_core.search.fusion import fuse  # noqa: E402

KS = (5, 10, 20)
DEFAULT_SETS = "synthetic,entities,locomo,realtalk,lme-sessions,lme-turns"


def units(ranked: Sequence[str], owner: dict[str, str]) -> list[str]:
    """Chunk ids -> the distinct units they belong to, in order."""
    seen: dict[str, None] = {}
    for chunk_id in ranked:
        unit = owner.get(chunk_id)
        if unit is not None:
            seen.setdefault(unit, None)
    return list(seen)


def score(row: Row, ranked: list[str], k: int) -> float:
    top = set(units(ranked, row["owner"])[:k])
    answers = set(row["answers"])
    found = len(answers & top)
    if row["metric"] == "all":
        return float(found == len(answers))
    return found / len(answers)


def fused_ids(row: Row, method: str, weight: float, candidates: int | None = None) -> list[str]:
    """The fused ranking; ``candidates``: each arm's first N only (the search fetches limit x 5,
    at most 200), since min-max normalisation depends on how many there are."""
    arms = {arm: [(c, s) for c, s in hits[:candidates]] for arm, hits in row["arms"].items()}
    if weight <= 0:
        return [c for c, _ in arms.get("keyword", [])]
    if weight >= 1:
        return [c for c, _ in arms.get("vector", [])]
    weights = {"keyword": 1.0 - weight, "vector": weight}
    return [f.chunk_id for f in fuse(arms, weights, method=method)]  # type: ignore[arg-type]


def table(
    sets: dict[str, list[Row]],
    configs: list[tuple[str, str, float]],
    candidates: int | None = None,
) -> list[str]:
    names = list(sets)
    header = ["fusion"] + [f"{n} @{k}" for n in names for k in KS] + ["mean", "worst"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    baseline: list[float] = []
    for label, method, weight in configs:
        values = []
        for name in names:
            rows = sets[name]
            for k in KS:
                values.append(
                    sum(score(r, fused_ids(r, method, weight, candidates), k) for r in rows)
                    / len(rows)
                )
        baseline = baseline or values
        worst = min(v - b for v, b in zip(values, baseline, strict=True))
        mean = sum(values) / len(values)
        cells = " | ".join(f"{v:.3f}" for v in values)
        lines.append(f"| {label} | {cells} | {mean:.3f} | {worst:+.3f} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "reme" / "fusion")
    parser.add_argument("--sets", default=DEFAULT_SETS)
    parser.add_argument("--weights", default="0.3,0.5")
    parser.add_argument("--methods", default="rrf,convex,adaptive,rerank,interleave")
    parser.add_argument(
        "--candidates", type=int, default=None, help="each arm's first N candidates (default all)"
    )
    parser.add_argument("--lme-limit", type=int, default=None)
    args = parser.parse_args()
    if args.candidates is not None and args.candidates < 1:
        parser.error("--candidates must be >= 1")
    sets = load_sets(args.sets.split(","), args.cache, lme_limit=args.lme_limit)
    configs: list[tuple[str, str, float]] = [
        ("keyword only", "rrf", 0.0),
        ("vector only", "rrf", 1.0),
    ]
    for method in args.methods.split(","):
        configs += [(f"{method} w={w}", method, float(w)) for w in args.weights.split(",")]
    print("questions: " + ", ".join(f"{n} {len(r)}" for n, r in sets.items()))
    print("\n".join(table(sets, configs, args.candidates)))


if __name__ == "__main__":
    main()
