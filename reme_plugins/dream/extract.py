"""Extraction: daily notes changed since they were last consolidated become units.

Notes are compared by content hash with the checkpoint, over every day (catch-up after
downtime) or one ``date``. They are packed into batches under a token budget, a note too long
for one batch being sent in parts. Units still queued from earlier runs come first; extraction
stops once ``max_units`` are in hand, and the rest of a batch's units are deferred to the queue.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field, field_validator

from reme_core.api import Llm, LlmError, Prompts, batches, content_hash, cut, estimate_tokens

from .checkpoint import Checkpoint
from .sources import note_path
from .units import DreamUnit, ExtractedUnit, Extraction

DAILY_NOTE = re.compile(r"^daily/(\d{4}-\d{2}-\d{2})/.+\.md$")
PART_OVERHEAD_TOKENS = 30
"""The markup around each note in the prompt."""


@dataclass(frozen=True)
class DailyNote:
    path: str
    day: str
    hash: str
    text: str


@dataclass(frozen=True)
class Part:
    note: DailyNote
    text: str
    index: int
    count: int

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text) + PART_OVERHEAD_TOKENS

    def render(self) -> str:
        part = f' part="{self.index}/{self.count}"' if self.count > 1 else ""
        return f'<note path="{self.note.path}"{part}>\n{self.text.rstrip()}\n</note>'


class ExtractFailure(BaseModel):
    paths: list[str]
    reason: str


class ExtractReport(BaseModel):
    units: list[DreamUnit] = Field(default_factory=list)
    """The units to integrate in this run, at most ``max_units``."""
    deferred: list[DreamUnit] = Field(default_factory=list)
    """New units over ``max_units``: queued for the next run."""
    extracted: dict[str, str] = Field(default_factory=dict)
    """Note -> the hash extracted from; checkpointed by dream_finish."""
    stale: list[str] = Field(default_factory=list)
    """Queued unit ids dropped: a source note changed or went (it is extracted again), or review
    already holds the unit (see ``reviewed``)."""
    pending: list[str] = Field(default_factory=list)
    """Notes changed since their last consolidation, when the run started."""
    failures: list[ExtractFailure] = Field(default_factory=list)
    problems: dict[str, str] = Field(default_factory=dict)
    """Daily notes that could not be read (binary, too large)."""
    reviewed: list[dict[str, str]] = Field(default_factory=list)
    """Units left out because review already holds them (``{unit, name, reason}``): a proposal
    pending, or the same unit rejected while its sources are unchanged."""


@dataclass
class Scan:
    notes: list[DailyNote] = field(default_factory=list)
    problems: dict[str, str] = field(default_factory=dict)


def scan_daily_notes(reme: Any) -> Scan:
    """Every daily note (``daily/<YYYY-MM-DD>/...md``) with its current hash, oldest day first."""
    scan = Scan()
    limit = reme.settings.index.max_file_bytes
    for rel in reme.paths.iter_files(suffixes=(".md",), exclude_globs=reme.settings.index.exclude):
        found = DAILY_NOTE.match(rel)
        if found is None:
            continue
        absolute = reme.root / rel
        try:
            if absolute.stat().st_size > limit:
                scan.problems[rel] = f"over the {limit}-byte limit (index.max_file_bytes)"
                continue
            data = absolute.read_bytes()
            text = data.decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            scan.problems[rel] = f"cannot be read as UTF-8 text: {exc}"
            continue
        scan.notes.append(DailyNote(rel, found.group(1), content_hash(data), text))
    scan.notes.sort(key=lambda n: (n.day, n.path))
    return scan


def split_note(note: DailyNote, budget: int) -> list[Part]:
    """The note in parts that each fit ``budget`` tokens, cut at line ends where possible."""
    room = max(budget - PART_OVERHEAD_TOKENS, 1)
    pieces: list[str] = []
    current = ""
    for line in note.text.splitlines(keepends=True):
        *heads, line = cut(line, room)  # one huge line: cut it by characters
        if heads:
            if current:
                pieces.append(current)
                current = ""
            pieces.extend(heads)
        # Lines are measured joined, not added up: parts hold more short lines that way.
        if current and estimate_tokens(current + line) > room:
            pieces.append(current)
            current = ""
        current += line
    if current or not pieces:
        pieces.append(current)
    return [Part(note, text, i + 1, len(pieces)) for i, text in enumerate(pieces)]


def pack(notes: Sequence[DailyNote], budget: int) -> list[list[Part]]:
    """Parts packed in order into batches of at most ``budget`` tokens."""
    parts = (part for note in notes for part in split_note(note, budget))
    return list(batches(parts, budget, lambda part: part.tokens))


def _batch_model(allowed: frozenset[str]) -> type[Extraction]:
    """The response model for one batch: a unit may only cite notes of that batch."""

    class BatchExtraction(Extraction):
        @field_validator("units")
        @classmethod
        def _known_sources(cls, units: list[ExtractedUnit]) -> list[ExtractedUnit]:
            for unit in units:
                paths = [note_path(source) for source in unit.sources]
                unknown = [s for s, p in zip(unit.sources, paths, strict=True) if p not in allowed]
                if unknown:
                    raise ValueError(
                        f"unit {unit.name!r} cites {', '.join(map(repr, unknown))}, which is not "
                        f"one of the notes given ({', '.join(sorted(allowed))})"
                    )
                unit.sources = list(dict.fromkeys(paths))
            return units

    BatchExtraction.__name__ = "Extraction"
    return BatchExtraction


def extract_batch(
    llm: Llm,
    prompts: Prompts,
    batch: list[Part],
    *,
    retries: int,
    output_retries: int | None,
) -> list[DreamUnit]:
    """Ask the model for the units in one batch; LlmError once every attempt failed."""
    hashes = {part.note.path: part.note.hash for part in batch}
    messages = [
        {"role": "system", "content": prompts.render("extract_system")},
        {
            "role": "user",
            "content": prompts.render(
                "extract_user",
                paths="\n".join(f"- {path}" for path in hashes),
                notes="\n\n".join(part.render() for part in batch),
            ),
        },
    ]
    model = _batch_model(frozenset(hashes))
    error = LlmError("extraction was not attempted")  # replaced by each attempt's failure
    for _ in range(retries + 1):
        try:
            answer = llm.structured(messages, model, max_retries=output_retries)
        except LlmError as exc:
            error = exc
            continue
        return [_unit(item, hashes) for item in answer.units]
    raise error


def _unit(item: ExtractedUnit, hashes: dict[str, str]) -> DreamUnit:
    name, summary = " ".join(item.name.split()), item.summary.strip()
    return DreamUnit(
        id=DreamUnit.make_id(name, item.bucket, summary, item.sources),
        name=name,
        bucket=item.bucket,
        summary=summary,
        sources=item.sources,
        source_hashes={path: hashes[path] for path in item.sources},
    )


def extract_units(
    reme: Any,
    llm: Llm,
    prompts: Prompts,
    checkpoint: Checkpoint,
    *,
    day: str | None,
    max_units: int,
    batch_tokens: int,
    retries: int,
    output_retries: int | None,
    reviewed: Callable[[DreamUnit], str | None] | None = None,
) -> ExtractReport:
    """Queued units still valid, then units from changed notes, until ``max_units``.

    ``reviewed(unit)`` says why review already holds a unit (None: it does not); such a unit is
    left out (and dropped from the queue), as handled."""
    scan = scan_daily_notes(reme)
    current = {note.path: note.hash for note in scan.notes}
    report = ExtractReport(problems=scan.problems)

    def held(unit: DreamUnit) -> bool:
        why = reviewed(unit) if reviewed is not None else None
        if why is not None:
            report.reviewed.append({"unit": unit.id, "name": unit.name, "reason": why})
        return why is not None

    for queued in checkpoint.queue:
        unit = queued.unit
        if any(current.get(path) != digest for path, digest in unit.source_hashes.items()):
            report.stale.append(unit.id)
        elif held(unit):
            report.stale.append(unit.id)  # dropped from the queue: review holds it
        elif day is None or any(_day(path) == day for path in unit.sources):
            report.units.append(unit)
    del report.units[max_units:]  # the rest stay queued as they are

    notes = [
        n
        for n in scan.notes
        if (day is None or n.day == day)
        and (n.path not in checkpoint.notes or checkpoint.notes[n.path].hash != n.hash)
    ]
    report.pending = [n.path for n in notes]
    done: dict[str, int] = {}  # parts of each note extracted so far
    parts_of: dict[str, int] = {}
    new: list[DreamUnit] = []
    for batch in pack(notes, batch_tokens):
        if len(report.units) + len(new) >= max_units:
            break  # enough for this run; the remaining notes stay pending
        try:
            units = extract_batch(
                llm, prompts, batch, retries=retries, output_retries=output_retries
            )
        except LlmError as exc:
            paths = list(dict.fromkeys(part.note.path for part in batch))
            report.failures.append(ExtractFailure(paths=paths, reason=str(exc)))
            continue
        new.extend(units)
        for part in batch:
            parts_of[part.note.path] = part.count
            done[part.note.path] = done.get(part.note.path, 0) + 1
    report.extracted = {
        path: current[path] for path, count in parts_of.items() if done[path] == count
    }
    room = max_units - len(report.units)
    seen = {u.id for u in report.units}
    for unit in new:
        if unit.id in seen:
            continue
        seen.add(unit.id)
        if held(unit):
            continue
        if room > 0:
            report.units.append(unit)
            room -= 1
        elif all(s in report.extracted for s in unit.sources):
            report.deferred.append(unit)
        # else: a source note was only part-extracted and stays pending, so this unit
        # comes again with the rest of it on the next run.
    return report


def _day(path: str) -> str | None:
    found = DAILY_NOTE.match(path)
    return found.group(1) if found else None
