"""Per-query fusion rules and interleaving fitted on every dev set at once, checked left-one-out.

    python benchmarks/fusion_rules.py [--cache DIR] [--candidates N] [--top 15]

Reads the cached arm rankings of benchmarks/turn_sets.py (LoCoMo and REALTALK dev with the
vector text carrying the turn it answers, as shipped; the planted-entity and synthetic sets by
name/keyword and by paraphrase; LongMemEval dev sessions and turns) and tries, on the same
rankings:

- ``step F>t ? hi : lo`` and ``lin F a b`` (vector weight ``a + b * F / scale``): convex fusion
  with a vector weight chosen per query from one piece of arm evidence F: the keyword top score's
  lead over the score at rank 2, 5, 10 (``kw_gap*``, 0..1), the top BM25 score, the vector top
  cosine's lead over rank 2, 10, 20, 50 (``vec_gap*``) and its z-score among the candidates, the
  share of the keyword top 10 the vector top 10 also holds (``overlap10``);
- ``interleave lo/hi PATTERN``: the convex rankings at two weights taken in turn by the pattern
  (``ab``: one each; reme_core.search.fusion's ``interleave`` is ``0.25/0.5 ab`` at the default
  weight).

It prints the rules with the best mean recall that stay at or above both keyword-only and the
default (convex 0.25) in every cell, then leave-one-set-out: the rule chosen on the other sets
(first at or above both, then mean) and how it does on the one left out; then the ceiling of a
per-question weight (each question's best, an oracle) and how well each feature alone tells the
questions that want more vector weight (0.5) from those that want less (AUC, pooled).
"""

from __future__ import annotations

import argparse
import itertools
import math
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from fusion_levers import score  # noqa: E402
from turn_sets import load_variant  # noqa: E402

from reme_core.search.fusion import fuse  # noqa: E402

KS = (5, 10, 20)
GRID = [round(i * 0.05, 2) for i in range(21)]
DEFAULT = 0.25
SETS = {
    "locomo": ("locomo", "plain", "prev"),
    "realtalk": ("realtalk", "plain", "prev"),
    "entities-name": ("entities-keyword", "plain", "plain"),
    "entities-paraphrase": ("entities-paraphrase", "plain", "plain"),
    "synthetic-keyword": ("synthetic-keyword", "plain", "plain"),
    "synthetic-paraphrase": ("synthetic-paraphrase", "plain", "plain"),
    "lme-sessions": ("lme-sessions", "plain", "plain"),
    "lme-turns": ("lme-turns", "plain", "plain"),
}
Arms = dict[str, list[tuple[str, float]]]
Cells = dict[str, list[float]]


def load(cache: Path, candidates: int | None) -> dict[str, list[dict]]:
    sets: dict[str, list[dict]] = {}
    for label, (name, kw_variant, vec_variant) in SETS.items():
        kw_rows = load_variant(name, kw_variant, cache)
        vec_rows = kw_rows if vec_variant == kw_variant else load_variant(name, vec_variant, cache)
        rows = []
        for a, b in zip(kw_rows, vec_rows, strict=True):
            if a["question"] != b["question"]:
                raise SystemExit(f"{name}: the variants' questions differ; clear the cache")
            arms = {
                "keyword": [(c, s) for c, s in a["arms"].get("keyword", [])][:candidates],
                "vector": [(c, s) for c, s in b["arms"]["vector"]][:candidates],
            }
            row = dict(a, owner={**b["owner"], **a["owner"]})
            rows.append({"row": row, "arms": arms, "features": features(row["question"], arms)})
        sets[label] = rows
    return sets


def features(question: str, arms: Arms) -> dict[str, float]:
    kw, vec = arms["keyword"], arms["vector"]
    out: dict[str, float] = {"query_words": float(len(question.split()))}
    top = kw[0][1] if kw else 0.0
    out["kw_top"] = top
    for depth in (2, 5, 10):
        out[f"kw_gap{depth}"] = (top - kw[min(depth, len(kw)) - 1][1]) / top if top > 0 else 0.0
    values = [s for _, s in vec]
    vtop = values[0] if values else 0.0
    for depth in (2, 10, 20, 50):
        out[f"vec_gap{depth}"] = vtop - values[min(depth, len(values)) - 1] if values else 0.0
    spread = statistics.pstdev(values) if len(values) > 1 else 0.0
    out["vec_z1"] = (vtop - statistics.fmean(values)) / spread if spread else 0.0
    vec10 = {c for c, _ in vec[:10]}
    out["overlap10"] = sum(c in vec10 for c, _ in kw[:10]) / 10
    return out


def convex(arms: Arms, weight: float) -> list[str]:
    if weight <= 0:
        return [c for c, _ in arms["keyword"]]
    if weight >= 1:
        return [c for c, _ in arms["vector"]]
    weights = {"keyword": 1.0 - weight, "vector": weight}
    return [f.chunk_id for f in fuse(arms, weights, method="convex")]


def interleave(first: Sequence[str], second: Sequence[str], pattern: str) -> list[str]:
    lists, positions, out, seen = {"a": first, "b": second}, {"a": 0, "b": 0}, [], set()
    for turn in itertools.cycle(pattern):
        source, i = lists[turn], positions[turn]
        while i < len(source) and source[i] in seen:
            i += 1
        if i < len(source):
            out.append(source[i])
            seen.add(source[i])
            i += 1
        positions[turn] = i
        if positions["a"] >= len(first) and positions["b"] >= len(second):
            return out


def scores(row: dict, ranked: list[str]) -> list[float]:
    return [score(row, ranked, k) for k in KS]


def mean_cells(per_question: list[list[float]]) -> list[float]:
    return [sum(q[j] for q in per_question) / len(per_question) for j in range(len(KS))]


def worst(cells: dict[str, list[float]], base: dict[str, list[float]], names: list[str]) -> float:
    return min(v - b for n in names for v, b in zip(cells[n], base[n], strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "reme" / "turns")
    parser.add_argument("--candidates", type=int, default=None, help="each arm's first N")
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    if args.candidates is not None and args.candidates < 1:
        parser.error("--candidates must be >= 1")
    sets = load(args.cache, args.candidates)
    names = list(sets)
    # Each question's recall at each k for every grid weight: a per-query rule is then a lookup.
    table = {
        n: [[scores(q["row"], convex(q["arms"], w)) for w in GRID] for q in rows]
        for n, rows in sets.items()
    }

    def by_rule(rule: Callable[[dict[str, float]], float]) -> Cells:
        out = {}
        for n, rows in sets.items():
            picks = []
            for q, line in zip(rows, table[n], strict=True):
                w = min(1.0, max(0.0, rule(q["features"])))
                picks.append(line[round(w / 0.05)])
            out[n] = mean_cells(picks)
        return out

    keyword, default = by_rule(lambda f: 0.0), by_rule(lambda f: DEFAULT)
    rules: list[tuple[str, Cells]] = []
    for w in GRID[1:13]:
        rules.append((f"convex {w}", by_rule(lambda f, w=w: w)))
    thresholds = {
        "kw_gap2": (0.1, 0.2, 0.3, 0.5), "kw_gap5": (0.2, 0.4, 0.6), "kw_gap10": (0.3, 0.5, 0.7),
        "kw_top": (2.0, 4.0, 6.0), "vec_gap2": (0.005, 0.01, 0.02),
        "vec_gap10": (0.01, 0.02, 0.04), "vec_gap20": (0.015, 0.025, 0.04),
        "vec_gap50": (0.02, 0.03, 0.05), "vec_z1": (3.0, 4.0, 5.0, 6.0),
        "overlap10": (0.1, 0.2, 0.3, 0.5), "query_words": (6.0, 9.0, 12.0),
    }  # fmt: skip
    for feat, ts in thresholds.items():
        for t in ts:
            for lo, hi in itertools.product((0.0, 0.1, 0.2, 0.25, 0.3), (0.25, 0.3, 0.4, 0.5, 0.6)):
                if lo != hi:
                    rule = lambda f, feat=feat, t=t, lo=lo, hi=hi: hi if f[feat] > t else lo  # noqa: E731
                    rules.append((f"step {feat}>{t} ? {hi} : {lo}", by_rule(rule)))
        scale = max(ts)
        for a, b in itertools.product((0.1, 0.2, 0.25, 0.3), (-0.4, -0.2, 0.2, 0.4)):
            rule = lambda f, feat=feat, a=a, b=b, s=scale: a + b * f[feat] / s  # noqa: E731
            rules.append((f"lin {feat} {a:+} {b:+}*F/{scale}", by_rule(rule)))
    for lo, hi in itertools.product((0.15, 0.2, 0.25, 0.3), (0.4, 0.5, 0.6, 0.7, 1.0)):
        for pattern in ("ab", "aab", "abb"):
            cells = {
                n: mean_cells([
                    scores(q["row"], interleave(convex(q["arms"], lo), convex(q["arms"], hi), pattern))
                    for q in rows
                ])
                for n, rows in sets.items()
            }  # fmt: skip
            rules.append((f"interleave {lo}/{hi} {pattern}", cells))
    both = {n: [max(a, b) for a, b in zip(keyword[n], default[n], strict=True)] for n in names}

    def rank_key(cells: Cells, on: list[str]) -> tuple[float, float]:
        mean = sum(sum(cells[n]) for n in on) / (len(on) * len(KS))
        return (min(0.0, worst(cells, both, on)), mean)

    print(f"questions: {', '.join(f'{n} {len(r)}' for n, r in sets.items())}; "
          f"candidates per arm: {args.candidates or 'all cached'}")  # fmt: skip
    print(f"\n{len(rules)} rules; the best by (at or above keyword-only and the default, mean):\n")
    print("| rule | mean | worst vs keyword | worst vs default | " + " | ".join(names) + " |")
    print("|---|---|---|---|" + "---|" * len(names))
    best = sorted(rules, key=lambda r: rank_key(r[1], names), reverse=True)[: args.top]
    fixed = [("keyword only", keyword), ("vector only", by_rule(lambda f: 1.0))]
    for label, cells in [*fixed, ("convex 0.25 (default)", default), *best]:
        mean = sum(sum(cells[n]) for n in names) / (len(names) * len(KS))
        text = " | ".join("/".join(f"{v:.3f}" for v in cells[n]) for n in names)
        print(f"| {label} | {mean:.4f} | {worst(cells, keyword, names):+.3f} | "
              f"{worst(cells, default, names):+.3f} | {text} |")  # fmt: skip
    print("\nleave one set out: the rule chosen on the others, on the one left out\n")
    print("| left out | chosen | worst vs keyword | worst vs default | recall @5/@10/@20 |")
    print("|---|---|---|---|---|")
    for held in names:
        train = [n for n in names if n != held]
        label, cells = max(rules, key=lambda r: rank_key(r[1], train))
        print(f"| {held} | {label} | {worst(cells, keyword, [held]):+.3f} | "
              f"{worst(cells, default, [held]):+.3f} | "
              + "/".join(f"{v:.3f}" for v in cells[held]) + " |")  # fmt: skip
    oracle = {}
    for n in names:
        oracle[n] = mean_cells([max(line, key=sum) for line in table[n]])
    print("\nceiling of a per-question weight (each question's best grid weight):")
    print(" ".join(f"{n} " + "/".join(f"{v:.3f}" for v in oracle[n]) for n in names))
    print("\nAUC of each feature, questions better at 0.5 than at 0.25 against worse (pooled):")
    half, base = GRID.index(0.5), GRID.index(DEFAULT)
    for feat in sets[names[0]][0]["features"]:
        up, down = [], []
        for n, rows in sets.items():
            for q, line in zip(rows, table[n], strict=True):
                gain = sum(line[half]) - sum(line[base])
                if gain:
                    (up if gain > 0 else down).append(q["features"][feat])
        pairs = [(u > d) + 0.5 * (u == d) for u in up for d in down]
        auc = sum(pairs) / len(pairs) if pairs else math.nan
        print(f"  {feat}: {auc:.3f} ({len(up)} up, {len(down)} down)")


if __name__ == "__main__":
    main()
