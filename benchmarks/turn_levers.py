"""Turn- and time-aware ranking levers on every dev set at once, one table per set, k = 5/10/20.

    python benchmarks/turn_levers.py [--sets locomo,realtalk,entities,synthetic,lme-turns]
        [--cache DIR] [--lme-limit N] [--date-weights 0.1,0.2,0.3] [--slack 0,3]

Levers (issue 21 item 2), measured against keyword-only and today's default (convex, vector
weight 0.25, the vector arm's text with the turn it answers), all on the same cached arm
rankings (benchmarks/turn_sets.py):

- contextual chunks: each text variant of the turns (``plain``, ``header`` = the markdown
  chunker's ``context_keys: [date]``, ``prev``, ``prev-short``, ``header+prev``) for both arms, and
  mixed: the keyword arm on one variant, the vector arm on another (``kw plain / vec prev``:
  the previous turn only in what is embedded). Sets that are not conversations have no previous
  turn: there ``prev`` is ``plain`` and ``header+prev`` is ``header``.
- note scores (LongMemEval sessions, the synthetic sets: notes of several chunks): a note ranked
  by its best chunk plus a share of its second best, instead of its best chunk alone.
- dates: the question's date phrases resolved against ``as_of`` (reme_core.search.dates, the
  code the search runs with ``search.date_boost``), fused scores moved toward notes dated in the
  span by a weight, with ``slack`` days of linear fall-off around it.

Columns per set: recall at each k (the set's metric), then @10 over the temporal questions
(LoCoMo/REALTALK category temporal, LongMemEval temporal-reasoning) and over the questions where
a date phrase resolved (``dated``; the only ones the date lever can change). The closing table
gives each row's mean and worst difference from keyword-only and from the default over every
set and k: a lever worth shipping is >= 0 against both everywhere.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from fusion_levers import score  # noqa: E402
from fusion_sets import Row  # noqa: E402
from turn_sets import load_variant  # noqa: E402

from reme_core.search.dates import date_boost, resolve  # noqa: E402
from reme_core.search.fusion import fuse  # noqa: E402

KS = (5, 10, 20)
WEIGHT = 0.25
TEMPORAL = {"temporal", "temporal-reasoning"}
CANDIDATES: dict[str, int] = {}
"""``--candidates N``: each arm's first N candidates only (the search fetches limit x 5, at most
200: 50 at the default limit of 10), since min-max normalisation depends on how many there are."""
AS_OF: dict[str, str] = {}
"""``--as-of-today``: every question asked today (what a runner that passes no ``as_of`` gets)."""
CONVERSATIONS = {"locomo", "realtalk", "lme-turns"}


@dataclass(frozen=True)
class Config:
    label: str
    keyword: str = "plain"
    vector: str = "plain"
    weight: float = WEIGHT
    date_weight: float = 0.0
    slack: int = 0
    aggregate: float = 0.0
    """Note-level scores from chunks: a note scores its best chunk plus this share of its second
    best (0: its best chunk alone, how units are ranked today)."""
    method: str = "convex"
    """A method of reme_core.search.fusion."""


def _set_variant(name: str, variant: str) -> str:
    """The variant a set has: notes that are not turns have no previous turn to quote."""
    if name.split("-")[0] in ("synthetic", "entities", "lme"):
        return "header" if variant.startswith("header") else "plain"
    return variant


def _as_of(row: Row) -> dt.date:
    return dt.date.fromisoformat(AS_OF.get("day", row["as_of"]))


def ranking(config: Config, kw_row: Row, vec_row: Row) -> list[str]:
    depth = CANDIDATES.get("n")
    arms = {
        "keyword": kw_row["arms"].get("keyword", [])[:depth],
        "vector": vec_row["arms"]["vector"][:depth],
    }
    if config.weight <= 0:
        scored = [(c, s) for c, s in arms["keyword"]]
        top = scored[0][1] if scored else 1.0
        scored = [(c, s / top) for c, s in scored]  # on the fused 0..1 scale, as convex does
    else:
        weights = {"keyword": 1.0 - config.weight, "vector": config.weight}
        fused = fuse(arms, weights, method=config.method)  # type: ignore[arg-type]
        scored = [(f.chunk_id, f.score) for f in fused]
    if config.date_weight > 0:
        owner = {**vec_row["owner"], **kw_row["owner"]}
        dates = {**vec_row.get("dates", {}), **kw_row.get("dates", {})}
        spans = resolve(kw_row["question"], _as_of(kw_row))

        def date_of(chunk_id: str) -> dt.date | None:
            day = dates.get(owner.get(chunk_id, ""))
            return dt.date.fromisoformat(day) if day else None

        scored = date_boost(scored, spans, date_of, config.date_weight, config.slack)
    if config.aggregate > 0:
        scored = _aggregate(scored, {**vec_row["owner"], **kw_row["owner"]}, config.aggregate)
    return [c for c, _ in scored]


def _aggregate(
    scored: list[tuple[str, float]], owner: dict, share: float
) -> list[tuple[str, float]]:
    """One chunk per unit (its best), ordered by best + ``share`` x second best."""
    best: dict[str, tuple[str, float]] = {}
    second: dict[str, float] = {}
    for chunk_id, value in scored:
        unit = owner.get(chunk_id)
        if unit is None:
            continue
        if unit not in best:
            best[unit] = (chunk_id, value)
        elif unit not in second:
            second[unit] = value
    order = sorted(best, key=lambda u: -(best[u][1] + share * second.get(u, 0.0)))
    return [best[u] for u in order]


def _score(config: Config, kw_row: Row, vec_row: Row, k: int) -> float:
    row = dict(kw_row)
    row["owner"] = {**vec_row["owner"], **kw_row["owner"]}
    return score(row, ranking(config, kw_row, vec_row), k)


def evaluate(name: str, config: Config, cache: Path, lme_limit: int | None) -> dict[str, object]:
    kw_rows = load_variant(name, _set_variant(name, config.keyword), cache, lme_limit=lme_limit)
    vec_rows = load_variant(name, _set_variant(name, config.vector), cache, lme_limit=lme_limit)
    if [r["question"] for r in kw_rows] != [r["question"] for r in vec_rows]:
        raise SystemExit(f"{name}: the variants' questions differ; clear the cache")
    pairs = list(zip(kw_rows, vec_rows, strict=True))
    values = {k: sum(_score(config, a, b, k) for a, b in pairs) / len(pairs) for k in KS}
    temporal = [(a, b) for a, b in pairs if a["group"] in TEMPORAL]
    dated = [(a, b) for a, b in pairs if resolve(a["question"], _as_of(a))]

    def at10(subset: list[tuple[Row, Row]]) -> str:
        if not subset:
            return "-"
        return f"{sum(_score(config, a, b, 10) for a, b in subset) / len(subset):.3f}"

    return {"k": values, "temporal": at10(temporal), "dated": at10(dated), "n": len(pairs),
            "nt": len(temporal), "nd": len(dated)}  # fmt: skip


def configs(date_weights: list[float], slacks: list[int]) -> list[Config]:
    rows = [
        Config("keyword only", weight=0.0),
        Config("default (convex 0.25, kw plain / vec prev)", "plain", "prev"),
        Config("convex 0.25, plain / plain (the earlier default)"),
        Config("keyword only, header", "header", "header", weight=0.0),
        Config("keyword only, prev", "prev", "prev", weight=0.0),
        Config("keyword only, prev-short", "prev-short", "prev-short", weight=0.0),
        Config("header / header", "header", "header"),
        Config("prev / prev", "prev", "prev"),
        Config("prev-short / prev-short", "prev-short", "prev-short"),
        Config("header+prev / header+prev", "header+prev", "header+prev"),
        Config("kw plain / vec prev", "plain", "prev"),
        Config("kw plain / vec prev-short", "plain", "prev-short"),
        Config("kw plain / vec header+prev", "plain", "header+prev"),
        Config("kw header / vec header+prev", "header", "header+prev"),
        Config("kw prev-short / vec prev", "prev-short", "prev"),
    ]
    for weight in (0.3, 0.35):
        rows.append(Config(f"plain, convex {weight}", weight=weight))
        rows.append(Config(f"header / header, convex {weight}", "header", "header", weight=weight))
    for weight in (0.25, 0.3, 0.35):
        rows.append(Config(f"kw plain / vec prev, convex {weight}", "plain", "prev", weight))
        rows.append(Config(f"kw header / vec prev, convex {weight}", "header", "prev", weight))
    for weight in (0.2, 0.3, 0.35):
        rows.append(Config(f"kw header / vec header+prev, convex {weight}", "header",
                           "header+prev", weight=weight))  # fmt: skip
    for share in (0.25, 0.5):
        rows.append(Config(f"default, note = best + {share} x second chunk", "plain", "prev",
                           aggregate=share))  # fmt: skip
    for weight in (0.2, 0.25, 0.3):
        rows.append(Config(f"kw plain / vec prev, interleave {weight}", "plain", "prev", weight,
                           method="interleave"))  # fmt: skip
    for weight in date_weights:
        for slack in slacks:
            tail = f"dates w={weight} slack={slack}"
            rows.append(Config(f"default + {tail}", "plain", "prev", date_weight=weight,
                               slack=slack))  # fmt: skip
            rows.append(Config(f"header / header + {tail}", "header", "header",
                               date_weight=weight, slack=slack))  # fmt: skip
            rows.append(Config(f"kw header / vec header+prev + {tail}", "header", "header+prev",
                               date_weight=weight, slack=slack))  # fmt: skip
    best = date_weights[0] if date_weights else 0.1
    slack = slacks[-1] if slacks else 0
    tail = f"dates w={best} slack={slack}"
    rows.append(Config(f"header / header, convex 0.35 + {tail}", "header", "header", 0.35, best,
                       slack))  # fmt: skip
    rows.append(Config(f"kw header / vec header+prev, convex 0.35 + {tail}", "header",
                       "header+prev", 0.35, best, slack))  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "reme" / "turns")
    parser.add_argument("--sets", default="locomo,realtalk,entities,synthetic")
    parser.add_argument("--date-weights", default="0.1,0.2,0.3")
    parser.add_argument("--slack", default="0,3")
    parser.add_argument("--lme-limit", type=int, default=None)
    parser.add_argument("--only", default="", help="labels to run, separated by ; (default all)")
    parser.add_argument(
        "--candidates", type=int, default=None, help="each arm's first N candidates (default all)"
    )
    parser.add_argument(
        "--as-of-today", action="store_true", help="resolve dates against today, not as_of"
    )
    args = parser.parse_args()
    if args.as_of_today:
        AS_OF["day"] = dt.date.today().isoformat()
    if args.candidates is not None:
        if args.candidates < 1:
            parser.error("--candidates must be >= 1")
        CANDIDATES["n"] = args.candidates
    names: list[str] = []
    for name in args.sets.split(","):
        names += (
            [f"{name}-keyword", f"{name}-paraphrase"]
            if name in ("synthetic", "entities")
            else [name]
        )
    rows = configs([float(w) for w in args.date_weights.split(",") if w],
                   [int(s) for s in args.slack.split(",") if s])  # fmt: skip
    if args.only:
        wanted = {label.strip() for label in args.only.split(";")}
        rows = [
            c for c in rows if c.label in wanted or c.label.startswith(("keyword only", "default"))
        ]
    results = {
        name: [evaluate(name, c, args.cache, args.lme_limit) for c in rows] for name in names
    }
    for name in names:
        first = results[name][0]
        print(
            f"\n### {name} ({first['n']} questions; temporal {first['nt']}, dated {first['nd']})\n"
        )
        print("| lever | @5 | @10 | @20 | temporal @10 | dated @10 |")
        print("|---|---|---|---|---|---|")
        for config, result in zip(rows, results[name], strict=True):
            cells = " | ".join(f"{result['k'][k]:.3f}" for k in KS)  # type: ignore[index]
            print(f"| {config.label} | {cells} | {result['temporal']} | {result['dated']} |")
    print("\n### every set, every k: difference from keyword-only and from the default\n")
    print("| lever | mean | worst vs keyword-only | worst vs default |")
    print("|---|---|---|---|")
    for index, config in enumerate(rows):
        values = [results[n][index]["k"][k] for n in names for k in KS]  # type: ignore[index]
        keyword = [results[n][0]["k"][k] for n in names for k in KS]  # type: ignore[index]
        default = [results[n][1]["k"][k] for n in names for k in KS]  # type: ignore[index]
        worst_kw = min(v - b for v, b in zip(values, keyword, strict=True))
        worst_def = min(v - b for v, b in zip(values, default, strict=True))
        mean = sum(values) / len(values)
        print(f"| {config.label} | {mean:.3f} | {worst_kw:+.3f} | {worst_def:+.3f} |")


if __name__ == "__main__":
    main()
