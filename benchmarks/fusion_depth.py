"""Fusion rules at the candidate depths a search fetches: each arm cut to 50, 100 and 200.

    python benchmarks/fusion_depth.py [--cache DIR] [--depths 50,100,200]
        [--rules "convex:0.25:0:ab;interleave:0.2:50:aab"]

A search fetches limit x ``search.candidate_multiplier`` candidates per arm (50 at the default
limit of 10, 100 at 20, at most ``candidate_cap`` = 200), and min-max normalisation of the vector
arm depends on how many there are: a rule measured on 200 cached candidates can lose at 50. This
applies each rule (``method:vector_weight:vector_floor_rank:interleave_pattern``, run by
reme_core.search.fusion.fuse, the code the search runs) to the cached arm rankings of
benchmarks/turn_sets.py (every dev set of benchmarks/fusion_rules.py: LoCoMo and REALTALK dev,
the planted-entity and synthetic sets by name/keyword and by paraphrase, LongMemEval dev sessions
and turns), each arm cut to each depth, and prints recall @5/@10/@20 per set and depth, then each
rule's worst cell against keyword-only and against the default (convex 0.25, no floor) at the
same depth, and its mean difference from the default.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from fusion_levers import score  # noqa: E402
from fusion_rules import load  # noqa: E402

from reme_core.search.fusion import FUSION_METHODS, check_floor_rank, check_pattern, fuse  # noqa: E402

KS = (5, 10, 20)
DEFAULT_RULE = "convex:0.25:0:ab"
RULES = (
    "convex:0.25:0:ab;convex:0.25:50:ab;convex:0.2:30:ab;interleave:0.25:0:ab;"
    "interleave:0.2:50:ab;interleave:0.2:50:aab"
)


def parse_rule(text: str) -> tuple[str, float, int, str]:
    """``method:weight:floor_rank:pattern`` (or ``keyword``), checked as the settings check it."""
    if text == "keyword":
        return ("keyword", 0.0, 0, "ab")
    parts = text.split(":")
    if len(parts) != 4:
        raise ValueError(f"rule {text!r}: want method:vector_weight:floor_rank:pattern")
    method, weight, floor, pattern = parts[0], float(parts[1]), int(parts[2]), parts[3]
    if method not in FUSION_METHODS:
        raise ValueError(f"rule {text!r}: unknown method; known: {', '.join(FUSION_METHODS)}")
    if not 0 < weight < 1:
        raise ValueError(f"rule {text!r}: vector_weight must be between 0 and 1")
    return method, weight, check_floor_rank(floor), check_pattern(pattern)


def ranking(rule: tuple[str, float, int, str], arms: dict, depth: int) -> list[str]:
    method, weight, floor, pattern = rule
    cut = {arm: hits[:depth] for arm, hits in arms.items()}
    if method == "keyword":
        return [c for c, _ in cut["keyword"]]
    weights = {"keyword": 1.0 - weight, "vector": weight}
    fused = fuse(cut, weights, method=method, floor_rank=floor, pattern=pattern)  # type: ignore[arg-type]
    return [f.chunk_id for f in fused]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "reme" / "turns")
    parser.add_argument("--depths", default="50,100,200")
    parser.add_argument("--rules", default=RULES, help="rules separated by ;")
    args = parser.parse_args()
    try:
        depths = [int(d) for d in args.depths.split(",")]
        texts = ["keyword", DEFAULT_RULE] + [
            r for r in args.rules.split(";") if r and r != DEFAULT_RULE
        ]
        rules = {text: parse_rule(text) for text in texts}
    except ValueError as exc:
        parser.error(str(exc))
    if any(d < 1 for d in depths):
        parser.error("--depths must be >= 1")
    sets = load(args.cache, None)
    names = list(sets)
    cells: dict[tuple[str, int], dict[str, list[float]]] = {}
    for depth in depths:
        for text, rule in rules.items():
            cells[(text, depth)] = {
                n: [
                    sum(score(q["row"], ranked, k) for q, ranked in zip(rows, order, strict=True))
                    / len(rows)
                    for k in KS
                ]
                for n, rows in sets.items()
                for order in [[ranking(rule, q["arms"], depth) for q in rows]]
            }
    print(f"questions: {', '.join(f'{n} {len(r)}' for n, r in sets.items())}")
    for depth in depths:
        print(f"\n### {depth} candidates per arm: recall @5/@10/@20\n")
        print("| rule | " + " | ".join(names) + " |")
        print("|---|" + "---|" * len(names))
        for text in rules:
            row = " | ".join("/".join(f"{v:.3f}" for v in cells[(text, depth)][n]) for n in names)
            print(f"| {text} | {row} |")

    def worst(text: str, base: str, depth: int) -> float:
        a, b = cells[(text, depth)], cells[(base, depth)]
        return min(x - y for n in names for x, y in zip(a[n], b[n], strict=True))

    def mean(text: str, depth: int) -> float:
        return sum(sum(v) for v in cells[(text, depth)].values()) / (len(names) * len(KS))

    print(
        "\n### worst cell vs keyword-only and vs the default at the same depth; mean vs default\n"
    )
    print("| rule | " + " | ".join(f"{d}: vs keyword / vs default / mean" for d in depths) + " |")
    print("|---|" + "---|" * len(depths))
    for text in rules:
        parts = [
            f"{worst(text, 'keyword', d):+.3f} / {worst(text, DEFAULT_RULE, d):+.3f} / "
            f"{mean(text, d) - mean(DEFAULT_RULE, d):+.4f}"
            for d in depths
        ]
        print(f"| {text} | " + " | ".join(parts) + " |")


if __name__ == "__main__":
    main()
