"""Pseudo-relevance feedback and the query's own keyword evidence, on every dev set at once.

    python benchmarks/feedback_levers.py [--cache DIR] [--depths 50,100,200] [--top 12]

Fuses benchmarks/keyword_feedback.py's records (per question: the query tokens' document
frequencies, RM3-style feedback rankings) with the cached arm rankings of
benchmarks/turn_sets.py (the sets of benchmarks/fusion_rules.py: LoCoMo and REALTALK dev with the
vector text carrying the turn it answers, as shipped; planted entities and the synthetic
workspace by name and by paraphrase; LongMemEval dev sessions and turns), each arm cut to each
depth a search fetches (limit x 5: 50 at limit 10, 100 at 20, 200 at most). Rules:

- ``prf M:T l``: the keyword arm's scores become RM3's ``(1 - l) / |q| x bm25(q, d) + l x
  sum_t w_t bm25(t, d)`` (T expansion terms from the first M hits, weights summing to 1), over
  the union of both rankings' candidates, then convex fusion at the default vector weight;
  ``prf ... kw only`` is the expanded keyword arm alone; ``hprf``: the same with the feedback
  chunks taken from the default fusion's first M hits instead of the keyword arm's;
- ``step F>t ? hi : lo``: convex fusion with the vector weight chosen per query from the query's
  keyword evidence F: ``idf_mass`` (sum of the IDF of its tokens the corpus holds),
  ``idf_share`` (that over the IDF of all its tokens, an unseen token counted at the IDF of a
  token in one chunk), ``matched`` (share of its tokens the corpus holds), ``max_idf`` (the
  rarest matched token's IDF, over ln(N)), ``tokens`` (how many);
- ``hprf ... top1`` / ``gapX``: feedback with a guard (the keyword arm's first hit kept first; no
  feedback when the keyword top score leads the second by more than X of itself);
- ``neighbour S`` / ``turn neighbour S``: each fused score plus S x its better neighbour's,
  neighbours being the chunks before and after it in its note (what a search could do) or, in
  LoCoMo/REALTALK, the turns before and after it in its session (one note per turn there, so
  only the conversation's turn ids say which notes neighbour).

Prints the rules ranked by (worst cell against both keyword-only and the default over every set,
k = 5/10/20 and depth; then mean), each with its worst cell vs keyword-only and vs the default per
depth, then the best rule's cells at each depth, and each feature's AUC at telling apart the
questions that want more vector weight (0.5 over 0.25) from those that want less.
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from fusion_levers import score  # noqa: E402
from fusion_rules import load  # noqa: E402
from keyword_feedback import FEEDBACK, TERMS, load_feedback  # noqa: E402

from reme_core.search.fusion import fuse  # noqa: E402

KS = (5, 10, 20)
DEFAULT = 0.25
GRID = (0.0, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5)
LAMBDAS = (0.1, 0.2, 0.3, 0.5)
NEIGHBOUR_SHARES = (0.05, 0.1, 0.2, 0.3)
GUARDS = ("top1", "gap0.2", "gap0.3", "gap0.5")
"""Guards on feedback: the keyword arm's first hit kept first (``top1``); no feedback when the
keyword top score leads the second by more than a share (``gapX``)."""
SOURCES = {"prf": "prf", "prf_fused": "hprf"}
"""Feedback chunks: the keyword arm's first hits (``prf``), the default fusion's (``hprf``)."""
FILES = {
    "locomo": ["locomo"],
    "realtalk": ["realtalk"],
    "entities": ["entities-name", "entities-paraphrase"],
    "synthetic": ["synthetic-keyword", "synthetic-paraphrase"],
    "lme-sessions": ["lme-sessions"],
    "lme-turns": ["lme-turns"],
}
Cells = dict[tuple[str, int], list[float]]  # (set, depth) -> recall @5/@10/@20


def attach(sets: dict[str, list[dict]], cache: Path, rankings: Path) -> None:
    """Each cached question gets its feedback record (matched by order, questions checked)."""
    for file, labels in FILES.items():
        records = load_feedback(file, cache, rankings)
        rows = [q for label in labels for q in sets[label]]
        if len(rows) != len(records):
            raise SystemExit(f"{file}: {len(rows)} cached questions, {len(records)} records")
        for q, rec in zip(rows, records, strict=True):
            if q["row"]["question"] != rec["question"]:
                raise SystemExit(f"{file}: questions out of order; rebuild the feedback cache")
            q["feedback"] = rec
            q["qfeat"] = query_features(rec)


def query_features(rec: dict) -> dict[str, float]:
    n = rec["n"]

    def idf(df: int) -> float:
        return math.log((n - df + 0.5) / (df + 0.5) + 1.0)

    terms = rec["terms"]
    matched = [idf(df) for _, df in terms if df > 0]
    every = [idf(max(df, 1)) for _, df in terms]
    return {
        "idf_mass": sum(matched),
        "idf_share": sum(matched) / sum(every) if every else 0.0,
        "matched": len(matched) / len(terms) if terms else 0.0,
        "max_idf": max(matched, default=0.0) / math.log(n + 1.0),
        "tokens": float(len(terms)),
    }


def expanded(
    q: dict, key: str, lam: float, depth: int, source: str = "prf", guard: str = ""
) -> list[tuple[str, float]]:
    """The keyword arm with RM3 feedback ``key`` (M:T) at interpolation ``lam``, top ``depth``;
    ``source`` ``prf``: feedback from the first keyword hits, ``prf_fused``: from the first hits
    of the default fusion."""
    orig = q["arms"]["keyword"][:depth]
    if guard.startswith("gap") and orig:
        # No feedback where the keyword arm already has a clear winner (its top score's lead
        # over the second above the threshold).
        top = orig[0][1]
        second = orig[1][1] if len(orig) > 1 else 0.0
        if top > 0 and (top - second) / top > float(guard[3:]):
            return list(orig)
    prf = q["feedback"][source][key]["ranking"][:depth]
    size = max(1, len(q["feedback"]["terms"]))
    scores: dict[str, float] = {}
    for cid, s in orig:
        scores[cid] = (1.0 - lam) * s / size
    for cid, s in prf:
        scores[cid] = scores.get(cid, 0.0) + lam * s
    out = sorted(scores.items(), key=lambda x: (-x[1], x[0]))[:depth]
    if guard == "top1" and orig and out and out[0][0] != orig[0][0]:
        # The keyword arm's own first hit stays first.
        first = orig[0][0]
        rest = [(c, v) for c, v in out if c != first]
        out = [(first, out[0][1]), *rest][:depth]
    return out


def neighbours(
    scored: list[tuple[str, float]], owner: dict[str, str], share: float, by: str
) -> list[str]:
    """Each hit's fused score plus ``share`` x the better of its two neighbours' (0 where a
    neighbour was not a candidate): ``chunk``: the chunks before and after it in its note
    (``path#ordinal``, what the search could do); ``turn``: the turns before and after it in its
    session (LoCoMo/REALTALK turn ids ``D<session>:<n>``; one note per turn, so only a
    conversation's own turn order says which notes neighbour)."""
    by_key: dict[str, float] = {}
    keys: dict[str, tuple[str, str]] = {}
    for cid, value in scored:
        if by == "chunk":
            head, _, ordinal = cid.rpartition("#")
            key = cid
        else:
            unit = owner.get(cid, "")
            head, _, ordinal = unit.rpartition(":")
            key = unit
        if not ordinal.isdigit():
            continue
        by_key[key] = max(value, by_key.get(key, 0.0))
        sep = "#" if by == "chunk" else ":"
        n = int(ordinal)
        keys[cid] = (f"{head}{sep}{n - 1}", f"{head}{sep}{n + 1}")
    boosted = []
    for cid, value in scored:
        before, after = keys.get(cid, ("", ""))
        boosted.append((cid, value + share * max(by_key.get(before, 0.0), by_key.get(after, 0.0))))
    return [cid for cid, _ in sorted(boosted, key=lambda x: (-x[1], x[0]))]


def recall(q: dict, ranked: list[str]) -> list[float]:
    return [score(q["row"], ranked, k) for k in KS]


def convex(arms: dict, weight: float) -> list[str]:
    if weight <= 0:
        return [c for c, _ in arms["keyword"]]
    weights = {"keyword": 1.0 - weight, "vector": weight}
    return [f.chunk_id for f in fuse(arms, weights, method="convex")]


def mean(lines: list[list[float]]) -> list[float]:
    return [sum(x[j] for x in lines) / len(lines) for j in range(len(KS))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "reme" / "turns")
    parser.add_argument("--feedback-cache", type=Path, default=None)
    parser.add_argument("--depths", default="50,100,200")
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--show", default="prf 3:5 0.2;prf 3:10 0.2", help="rules to tabulate, ;")
    parser.add_argument("--prf-table", action="store_true", help="every feedback rule's row")
    args = parser.parse_args()
    depths = [int(d) for d in args.depths.split(",")]
    sets = load(args.cache, None)
    attach(sets, args.feedback_cache or args.cache, args.cache)
    names = list(sets)
    # Per question, depth and grid weight: recall @5/@10/@20 (a per-query rule is a lookup).
    grid = {
        (n, d): [
            [recall(q, convex({a: h[:d] for a, h in q["arms"].items()}, w)) for w in GRID]
            for q in rows
        ]
        for n, rows in sets.items()
        for d in depths
    }
    rules: dict[str, Cells] = {}

    def by_weight(pick) -> Cells:  # type: ignore[no-untyped-def]
        out: Cells = {}
        for n, rows in sets.items():
            for d in depths:
                out[(n, d)] = mean(
                    [
                        line[GRID.index(pick(q["qfeat"]))]
                        for q, line in zip(rows, grid[(n, d)], strict=True)
                    ]
                )
        return out

    keyword, default = by_weight(lambda f: 0.0), by_weight(lambda f: DEFAULT)
    for w in GRID[1:]:
        rules[f"convex {w}"] = by_weight(lambda f, w=w: w)
    thresholds = {
        "idf_mass": (3.0, 5.0, 8.0, 12.0),
        "idf_share": (0.5, 0.7, 0.9),
        "matched": (0.5, 0.75, 0.99),
        "max_idf": (0.3, 0.5, 0.7),
        "tokens": (2.0, 4.0, 6.0),
    }
    pairs = [(lo, hi) for lo, hi in itertools.product(GRID, GRID) if lo < hi]
    pairs = [(lo, hi) for lo, hi in pairs if DEFAULT in (lo, hi)]
    for feat, ts in thresholds.items():
        for t in ts:
            for lo, hi in pairs:
                # More vector weight where the keyword evidence is weak (F below t), and the
                # other way round.
                rules[f"step {feat}<{t} ? {hi} : {lo}"] = by_weight(
                    lambda f, feat=feat, t=t, lo=lo, hi=hi: hi if f[feat] < t else lo
                )
                rules[f"step {feat}>{t} ? {hi} : {lo}"] = by_weight(
                    lambda f, feat=feat, t=t, lo=lo, hi=hi: hi if f[feat] > t else lo
                )
    for source, m, t, lam in itertools.product(SOURCES, FEEDBACK, TERMS, LAMBDAS):
        key, name = f"{m}:{t}", SOURCES[source]
        fused: Cells = {}
        alone: Cells = {}
        for n, rows in sets.items():
            for d in depths:
                lines, solo = [], []
                for q in rows:
                    kw = expanded(q, key, lam, d, source)
                    solo.append(recall(q, [c for c, _ in kw]))
                    arms = {"keyword": kw, "vector": q["arms"]["vector"][:d]}
                    lines.append(recall(q, convex(arms, DEFAULT)))
                fused[(n, d)], alone[(n, d)] = mean(lines), mean(solo)
        rules[f"{name} {key} {lam}"] = fused
        if source == "prf":
            rules[f"{name} {key} {lam} kw only"] = alone

    for key, guard in itertools.product(("3:5", "3:10", "3:20"), GUARDS):
        fused = {}
        for n, rows in sets.items():
            for d in depths:
                lines = []
                for q in rows:
                    kw = expanded(q, key, 0.2, d, "prf_fused", guard)
                    arms = {"keyword": kw, "vector": q["arms"]["vector"][:d]}
                    lines.append(recall(q, convex(arms, DEFAULT)))
                fused[(n, d)] = mean(lines)
        rules[f"hprf {key} 0.2 {guard}"] = fused

    for mu, by in itertools.product(NEIGHBOUR_SHARES, ("chunk", "turn")):
        cells = {}
        for n, rows in sets.items():
            for d in depths:
                lines = []
                for q in rows:
                    arms = {a: h[:d] for a, h in q["arms"].items()}
                    weights = {"keyword": 1.0 - DEFAULT, "vector": DEFAULT}
                    scored = [(f.chunk_id, f.score) for f in fuse(arms, weights, method="convex")]
                    lines.append(recall(q, neighbours(scored, q["row"]["owner"], mu, by)))
                cells[(n, d)] = mean(lines)
        rules[f"{'neighbour' if by == 'chunk' else 'turn neighbour'} {mu}"] = cells

    def worst(cells: Cells, base: Cells, d: int | None = None) -> float:
        return min(
            v - b
            for (n, dd), vals in cells.items()
            if d is None or dd == d
            for v, b in zip(vals, base[(n, dd)], strict=True)
        )

    def avg(cells: Cells) -> float:
        return sum(sum(v) for v in cells.values()) / (len(cells) * len(KS))

    both = {
        key: [max(a, b) for a, b in zip(keyword[key], default[key], strict=True)] for key in keyword
    }

    def summary(cells: Cells, d: int) -> str:
        mine = avg({k: v for k, v in cells.items() if k[1] == d})
        base = avg({k: v for k, v in default.items() if k[1] == d})
        return (
            f"{worst(cells, keyword, d):+.3f} / {worst(cells, default, d):+.3f} / "
            f"{mine - base:+.4f}"
        )

    ranked = sorted(
        rules.items(), key=lambda r: (min(0.0, worst(r[1], both)), avg(r[1])), reverse=True
    )
    print(f"{len(rules)} rules; questions: {', '.join(f'{n} {len(r)}' for n, r in sets.items())}")
    print(
        "\n| rule | "
        + " | ".join(f"{d}: vs kw / vs default / mean vs default" for d in depths)
        + " |"
    )
    print("|---|" + "---|" * len(depths))
    for label, cells in [
        ("keyword only", keyword),
        ("default (convex 0.25)", default),
        *ranked[: args.top],
    ]:
        print(f"| {label} | " + " | ".join(summary(cells, d) for d in depths) + " |")
    never = [label for label, cells in rules.items() if worst(cells, keyword) >= 0]
    print(f"\nrules at or above keyword-only in every cell at every depth: {len(never)}")
    for label in never:
        cells = rules[label]
        print(
            f"  {label}: vs default "
            + " / ".join(f"{worst(cells, default, d):+.3f}" for d in depths)
            + f", mean vs default {avg(cells) - avg(default):+.4f}"
        )
    if args.prf_table:
        print(
            "\n| prf rule | " + " | ".join(f"{d}: vs kw / vs default / mean" for d in depths) + " |"
        )
        for label, cells in sorted(rules.items(), key=lambda r: -avg(r[1])):
            if label.startswith(("prf", "hprf", "neighbour", "turn neighbour")):
                print(f"| {label} | " + " | ".join(summary(cells, d) for d in depths) + " |")
    shown = [("keyword only", keyword), ("default (convex 0.25)", default)]
    shown += [ranked[0]]
    wanted = [label for label in args.show.split(";") if label]
    shown += [(label, rules[label]) for label in wanted if label in rules and label != ranked[0][0]]
    for d in depths:
        print(f"\n### {d} candidates per arm: recall @5/@10/@20\n")
        print("| rule | " + " | ".join(names) + " |")
        print("|---|" + "---|" * len(names))
        for label, cells in shown:
            print(
                f"| {label} | "
                + " | ".join("/".join(f"{v:.3f}" for v in cells[(n, d)]) for n in names)
                + " |"
            )
    print("\nAUC of each query feature, questions better at 0.5 than at 0.25 against worse (200):")
    half, base = GRID.index(0.5), GRID.index(DEFAULT)
    d = max(depths)
    for feat in next(iter(sets.values()))[0]["qfeat"]:
        up, down = [], []
        for n, rows in sets.items():
            for q, line in zip(rows, grid[(n, d)], strict=True):
                gain = sum(line[half]) - sum(line[base])
                if gain:
                    (up if gain > 0 else down).append(q["qfeat"][feat])
        pairs_ = [(u > v) + 0.5 * (u == v) for u in up for v in down]
        print(f"  {feat}: {sum(pairs_) / len(pairs_):.3f} ({len(up)} up, {len(down)} down)")


if __name__ == "__main__":
    main()
