"""A run's result from its conversation rows: one row per question, tables per ability.

The runner scores conversations (ingestion is per conversation), but BEAM reports per question
and ability, so the result's items are the questions (``<conversation>/<ability>:<n>``, category
= ability) and ``RunResult`` averages them per ability and overall. ``notes`` keeps what the
question rows do not: the ``macro`` row (abilities weighed equally), each conversation's
ingestion report, failures, and the run's options. Every question's metrics also hold the BM25
floor's (``bm25_recall@<k>msg``, ``floor.py``), so its means sit beside reme's in the result.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from reme_beam.floor import LABEL as FLOOR_LABEL
from reme_beam.floor import PREFIX as FLOOR
from reme_beam.metrics import by_ability, metric_name
from reme_core.api import BenchUsage, Manifest, RunResult, metric_table

BENCHMARK = "beam"


def question_rows(conversations: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for conv in conversations:
        if conv.get("error"):
            continue
        for q in conv.get("questions", []):
            rows.append(
                {
                    "id": f"{conv['id']}/{q['qid']}",
                    "conversation": conv["id"],
                    "category": q["ability"],
                    **{k: v for k, v in q.items() if k != "ability"},
                    "ability": q["ability"],
                    "error": None,
                }
            )
    return rows


def build_result(
    conversations: Sequence[Mapping[str, Any]],
    manifest: Manifest,
    *,
    seconds: float,
    options: Mapping[str, Any],
) -> RunResult:
    questions = question_rows(conversations)
    table = by_ability({"ability": q["category"], "metrics": q["metrics"]} for q in questions)
    failed = [str(c["id"]) for c in conversations if c.get("error")]
    notes = {
        "options": dict(options),
        "items": "questions; ingestion is per conversation (see conversations)",
        "macro": {k: v for k, v in table.get("macro", {}).items() if not k.startswith("n:")},
        "no_evidence": sum(1 for q in questions if not q["evidence"]),
        "conversations": [
            {
                "id": c["id"],
                "error": c.get("error"),
                "traceback": c.get("traceback"),
                "sessions": c.get("sessions"),
                "messages": c.get("messages"),
                "chat_file": c.get("chat_file"),
                "search_steps": c.get("search_steps"),
                "ingest": c.get("ingest"),
                "usage": c.get("usage"),
                "seconds": c.get("seconds"),
            }
            for c in conversations
        ],
    }
    result = RunResult.from_items(BENCHMARK, manifest, questions, seconds=seconds, notes=notes)
    # Usage is spent per conversation (ingestion) as well as per question: count it there.
    usage = BenchUsage()
    for conv in conversations:
        usage.add(conv.get("usage"))
    result.usage = usage
    result.failed = failed
    return result


def columns(ks: Sequence[int], qa: bool) -> dict[str, list[str]]:
    """The tables of the Markdown report: title -> metric columns, one per message budget k."""
    out = {
        "evidence recall within k messages shown (recall@<k>msg)": [
            metric_name("recall", k) for k in ks
        ],
        "the BM25 floor (plain BM25 over single messages, its first k shown)": [
            f"{FLOOR}{metric_name(key, k)}" for key in ("recall", "any") for k in ks
        ],
        "any evidence within k messages shown": [metric_name("any", k) for k in ks],
        "messages shown within budget k (k, or fewer: no more hits)": [
            metric_name("shown", k) for k in ks
        ],
        "hits read within k messages shown (how wide the results are)": [
            metric_name("hits", k) for k in ks
        ],
    }
    if qa:
        out["answers (rubric judge 0..1; event ordering: tau x F1)"] = [
            "judge",
            "ordering",
            "tau_norm",
        ]
    return out


def compare_metrics(ks: Sequence[int], qa: bool) -> list[str]:
    """compare.md's side-by-side tables by default: recall at every budget, then the hits the
    largest budget took."""
    out = [*(metric_name("recall", k) for k in ks), metric_name("hits", max(ks))]
    return [*out, "judge"] if qa else out


def markdown(result: RunResult, ks: Sequence[int], qa: bool) -> str:
    """The run's report: provenance line, then one table per metric family, abilities as rows,
    ``overall`` (questions weighed equally) and ``macro`` (abilities weighed equally) last."""
    head = "\n\n".join(result.markdown([]).split("\n\n")[:2])  # heading, provenance
    options = result.notes.get("options", {})
    lines = [
        head,
        "",
        f"mode {options.get('mode')}, sessions per {options.get('session_unit')}, search steps "
        f"{_steps(result)}; {len(result.items)} questions, {result.notes.get('no_evidence', 0)} "
        "without evidence (abstention: no retrieval figures)",
    ]
    rows = {**result.categories, "overall": result.overall, "macro": _macro(result)}
    for title, metrics in columns(ks, qa).items():
        lines += ["", f"### {title}", "", metric_table(rows, metrics)]
    if result.failed:
        lines += ["", f"failed conversations: {', '.join(result.failed)}"]
    return "\n".join(lines) + "\n"


def overall_markdown(results: Mapping[str, RunResult], ks: Sequence[int]) -> str:
    """Configs, then the BM25 floor (from the first run: it does not depend on the config), as
    rows; evidence recall within k messages shown, overall, as columns."""
    metrics = [metric_name("recall", k) for k in ks]
    rows: dict[str, Mapping[str, float]] = {label: r.overall for label, r in results.items()}
    if results:
        first = next(iter(results.values())).overall
        floor = {m: first.get(f"{FLOOR}{m}", math.nan) for m in metrics}
        rows[FLOOR_LABEL] = floor | {"n": first.get("n", 0.0)}
    return metric_table(rows, metrics)


def side_by_side_markdown(
    results: Mapping[str, RunResult], metrics: Sequence[str], abilities: Sequence[str]
) -> str:
    """Configs as columns, abilities (then overall and macro) as rows, one table per metric; a
    metric the floor has too (``recall@<k>msg``) gets the floor's column last, from the first
    run."""
    parts = []
    labels = list(results)
    first = next(iter(results.values()), None)
    for metric in metrics:
        floor = first is not None and f"{FLOOR}{metric}" in first.overall
        head = ["ability", *labels, *([FLOOR_LABEL] if floor else [])]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for ability in [*abilities, "overall", "macro"]:
            cells = [_cell(_row(results[label], ability).get(metric)) for label in labels]
            if floor:
                cells.append(_cell(_row(first, ability).get(f"{FLOOR}{metric}")))  # type: ignore[arg-type]
            lines.append(f"| {ability} | " + " | ".join(cells) + " |")
        parts.append(f"### {metric}\n\n" + "\n".join(lines))
    return "\n\n".join(parts) + "\n"


def _row(result: RunResult, ability: str) -> Mapping[str, float]:
    if ability == "overall":
        return result.overall
    if ability == "macro":
        return _macro(result)
    return result.categories.get(ability, {})


def _macro(result: RunResult) -> dict[str, float]:
    macro = dict(result.notes.get("macro", {}))
    macro.setdefault("n", result.overall.get("n", 0.0))
    return macro


def _steps(result: RunResult) -> str:
    steps = {tuple(c.get("search_steps") or []) for c in result.notes.get("conversations", [])}
    return ", ".join("+".join(s) for s in sorted(steps) if s) or "-"


def _cell(value: float | None) -> str:
    return (
        "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.3f}"
    )
