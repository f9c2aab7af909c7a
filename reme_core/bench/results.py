"""One benchmark run's result: per-item rows, per-category and overall means, usage, manifest.

An item row is a plain dict, written by the benchmark's worker (see ``runner.run_items``)::

    {"id": "q1", "category": "multi-session",
     "metrics": {"session_recall_any@5": 1.0, ...},   # numbers; a missing key = not applicable
     "usage": {"calls": 3, "prompt_tokens": 900, "completion_tokens": 40, "cache_hits": 1},
     "seconds": 1.2, "error": None, ...anything else the benchmark wants to keep}

``aggregate`` averages each metric over the items that have it (failed items excluded), per
category and overall. ``RunResult.save(out_dir)`` writes ``result.json`` and ``result.md``.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from reme_core.bench.manifest import Manifest

RESULT_JSON = "result.json"
RESULT_MARKDOWN = "result.md"
COUNT = "n"
"""The key of the item count in each ``categories`` / ``overall`` row."""


class BenchUsage(BaseModel):
    """LLM calls and tokens a run (or one item) spent; ``cache_hits`` cost nothing."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hits: int = 0

    def add(self, other: BenchUsage | Mapping[str, Any] | None) -> None:
        if other is None:
            return
        if isinstance(other, BenchUsage):
            other = other.model_dump()
        for key in type(self).model_fields:
            setattr(self, key, getattr(self, key) + int(other.get(key, 0) or 0))


class RunResult(BaseModel):
    """A whole run. ``categories`` and ``overall`` map metric names to means, plus ``n``."""

    benchmark: str
    manifest: Manifest
    items: list[dict[str, Any]] = Field(default_factory=list)
    categories: dict[str, dict[str, float]] = Field(default_factory=dict)
    overall: dict[str, float] = Field(default_factory=dict)
    usage: BenchUsage = Field(default_factory=BenchUsage)
    seconds: float = 0.0
    """Wall time of the run (items resumed from an earlier run took no time in this one)."""
    failed: list[str] = Field(default_factory=list)
    """Ids of items whose worker raised; their error is in their row."""
    notes: dict[str, Any] = Field(default_factory=dict)
    """Benchmark-specific facts worth keeping (mode, skipped question counts, k values)."""

    @classmethod
    def from_items(
        cls,
        benchmark: str,
        manifest: Manifest,
        items: Sequence[dict[str, Any]],
        *,
        seconds: float = 0.0,
        notes: Mapping[str, Any] | None = None,
    ) -> RunResult:
        """Aggregate ``items`` (rows as in the module doc) into a result."""
        categories, overall = aggregate(items)
        usage = BenchUsage()
        for item in items:
            usage.add(item.get("usage"))
        return cls(
            benchmark=benchmark,
            manifest=manifest,
            items=list(items),
            categories=categories,
            overall=overall,
            usage=usage,
            seconds=seconds,
            failed=[str(i.get("id")) for i in items if i.get("error")],
            notes=dict(notes or {}),
        )

    @classmethod
    def read(cls, path: str | Path) -> RunResult:
        """Load a ``result.json`` (or the folder holding one)."""
        path = Path(path)
        if path.is_dir():
            path = path / RESULT_JSON
        return cls.model_validate_json(path.read_text(encoding="utf-8"))

    def write(self, path: str | Path) -> Path:
        """Write the JSON atomically; return the path."""
        path = Path(path)
        _atomic_write(path, self.model_dump_json(indent=1))
        return path

    def save(self, out_dir: str | Path, metrics: Sequence[str] | None = None) -> Path:
        """Write ``result.json`` and ``result.md`` into ``out_dir``; return the JSON path."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        _atomic_write(out / RESULT_MARKDOWN, self.markdown(metrics))
        return self.write(out / RESULT_JSON)

    def markdown(self, metrics: Sequence[str] | None = None) -> str:
        """A heading with the run's provenance, then one table: categories and overall as rows,
        ``metrics`` (default: every metric, in first-seen order) as columns."""
        m = self.manifest
        git = "no git" if m.git is None else m.git.revision[:12] + (" dirty" if m.git.dirty else "")
        lines = [
            f"## {self.benchmark}: {m.config_name or 'default config'}",
            "",
            f"reme {m.reme_version}, git {git}, {m.date}; "
            f"{int(self.overall.get(COUNT, 0))} items scored, {len(self.failed)} failed, "
            f"{self.seconds:.0f} s, {self.usage.calls} LLM calls "
            f"({self.usage.cache_hits} cached)",
        ]
        if m.overrides:
            lines.append(f"overrides: {' '.join(m.overrides)}")
        lines += ["", metric_table({**self.categories, "overall": self.overall}, metrics)]
        return "\n".join(lines) + "\n"


def aggregate(
    items: Iterable[Mapping[str, Any]], category_key: str = "category"
) -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """Means per category and overall of every metric in the items' ``metrics`` dicts.

    A metric is averaged over the items that have it (not nan); failed items (``error`` set) and
    items with empty ``metrics`` (skipped by the benchmark's rules) are left out. Each row also
    has ``n``: the items scored in it.
    """
    by_category: dict[str, list[Mapping[str, float]]] = defaultdict(list)
    scored: list[Mapping[str, float]] = []
    for item in items:
        if item.get("error") or not isinstance(item.get("metrics"), Mapping):
            continue
        if not item["metrics"]:
            continue  # skipped by the benchmark's rules (LongMemEval abstention, for one)
        by_category[str(item.get(category_key, "all"))].append(item["metrics"])
        scored.append(item["metrics"])
    categories = {name: _means(rows) for name, rows in sorted(by_category.items())}
    return categories, _means(scored)


def metric_table(rows: Mapping[str, Mapping[str, float]], metrics: Sequence[str] | None) -> str:
    """A Markdown table: one row per key of ``rows``, a column per metric, ``n`` last."""
    if metrics is None:
        seen: dict[str, None] = {}
        for row in rows.values():
            seen.update(dict.fromkeys(k for k in row if k != COUNT))
        metrics = list(seen)
    head = ["", *metrics, COUNT]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, row in rows.items():
        cells = [_cell(row.get(metric)) for metric in metrics]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {int(row.get(COUNT, 0))} |")
    return "\n".join(lines)


def side_by_side(
    results: Mapping[str, RunResult], metrics: Sequence[str], category: str | None = None
) -> str:
    """A Markdown table comparing runs: one row per run (its label), a column per metric, from
    ``overall`` or from one ``category``."""
    rows = {
        label: (r.overall if category is None else r.categories.get(category, {}))
        for label, r in results.items()
    }
    return metric_table(rows, metrics)


def _means(rows: Sequence[Mapping[str, float]]) -> dict[str, float]:
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for row in rows:
        for key, value in row.items():
            if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
                continue
            sums[key] = sums.get(key, 0.0) + float(value)
            counts[key] = counts.get(key, 0) + 1
    out = {key: sums[key] / counts[key] for key in sums}
    out[COUNT] = float(len(rows))
    return out


def _cell(value: float | None) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.3f}"


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: Path, data: Any) -> None:
    """Write JSON atomically (temp file + rename), so a killed run leaves no half file."""
    _atomic_write(path, json.dumps(data, ensure_ascii=False, indent=1, default=str))
