"""A run's result from its conversation rows: one item per question, tables per category.

The runner scores conversations (ingestion is per conversation); LoCoMo and REALTALK report per
question and category, so the result's items are the questions (category = upstream's category,
named) and ``RunResult`` averages them per category and overall. Each question's metrics hold
reme's ``recall@k`` and the floor's ``bm25_recall@k`` side by side.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from reme_core.api import Manifest, RunResult, metric_table
from reme_locomo.worker import FLOOR

BENCHMARK = "locomo"
FLOOR_LABEL = "BM25 floor"


def question_rows(conversations: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for conv in conversations:
        if conv.get("error"):
            continue
        for q in conv.get("questions", []):
            rows.append({"id": q["qid"], "conversation": conv["id"], **q, "error": None})
    return rows


def build_result(
    conversations: Sequence[Mapping[str, Any]],
    manifest: Manifest,
    *,
    seconds: float,
    notes: Mapping[str, Any],
) -> RunResult:
    questions = question_rows(conversations)
    facts = {
        **notes,
        "items": "questions; ingestion is per conversation (see conversations)",
        "questions": len(questions),
        "no_evidence": sum(1 for q in questions if not q["evidence"]),
        "missing_evidence": sum(len(q["missing_evidence"]) for q in questions),
        "conversations": [
            {
                k: c.get(k)
                for k in ("id", "format", "file", "turns", "notes", "search_steps", "seconds")
            }
            | {"error": c.get("error"), "traceback": c.get("traceback")}
            for c in conversations
        ],
    }
    formats = {c.get("format") for c in conversations if c.get("format")}
    benchmark = "realtalk" if formats == {"realtalk"} else BENCHMARK
    result = RunResult.from_items(benchmark, manifest, questions, seconds=seconds, notes=facts)
    result.failed = [str(c["id"]) for c in conversations if c.get("error")]
    return result


def columns(ks: Sequence[int]) -> list[str]:
    return [f"recall@{k}" for k in ks] + [f"{FLOOR}recall@{k}" for k in ks]


def markdown(result: RunResult, ks: Sequence[int]) -> str:
    """Provenance, then turn recall@k per category and overall, reme's beside the floor's."""
    notes = result.notes
    steps = {tuple(c.get("search_steps") or []) for c in notes.get("conversations", [])}
    lines = [
        result.markdown([]).split("\n\n")[0],
        "",
        result.markdown([]).split("\n\n")[1],
        "",
        f"{notes.get('dataset')}: {len(notes.get('conversations', []))} conversations, "
        f"{notes.get('questions')} questions ({notes.get('no_evidence')} without evidence in the "
        f"conversation: no figures; {notes.get('missing_evidence')} evidence ids naming no turn, "
        f"set aside); search steps {', '.join('+'.join(s) for s in sorted(steps) if s) or '-'}",
        "",
        "turn recall@k (share of a question's evidence turns in the top k turns); `bm25_` = "
        "the floor, plain BM25 over the same turns",
        "",
        metric_table({**result.categories, "overall": result.overall}, columns(ks)),
    ]
    if result.failed:
        lines += ["", f"failed conversations: {', '.join(result.failed)}"]
    return "\n".join(lines) + "\n"


def compare_markdown(title: str, results: Mapping[str, RunResult], ks: Sequence[int]) -> str:
    """Configs (and the floor, from the first run) as rows, recall@k as columns; then one table
    per k with categories as rows and configs as columns."""
    first = next(iter(results.values()))
    overall: dict[str, Mapping[str, float]] = {label: r.overall for label, r in results.items()}
    overall[FLOOR_LABEL] = {
        f"recall@{k}": first.overall.get(f"{FLOOR}recall@{k}", math.nan) for k in ks
    } | {"n": first.overall.get("n", 0.0)}
    parts = [f"## {title}", "", metric_table(overall, [f"recall@{k}" for k in ks])]
    categories = list(dict.fromkeys(c for r in results.values() for c in r.categories))
    for k in ks:
        head = ["category", *results, FLOOR_LABEL, "n"]
        table = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for category in [*categories, "overall"]:
            rows = [
                r.overall if category == "overall" else r.categories.get(category, {})
                for r in results.values()
            ]
            floor_row = (
                first.overall if category == "overall" else first.categories.get(category, {})
            )
            cells = [_cell(row.get(f"recall@{k}")) for row in rows]
            cells.append(_cell(floor_row.get(f"{FLOOR}recall@{k}")))
            cells.append(str(int(floor_row.get("n", 0))))
            table.append(f"| {category} | " + " | ".join(cells) + " |")
        parts += ["", f"### turn recall@{k} per category", "", "\n".join(table)]
    return "\n".join(parts) + "\n"


def _cell(value: float | None) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.3f}"
