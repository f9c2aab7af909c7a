"""The inputs of a run: the topics file as it is, the daily notes changed since the cursor, and
the prompt of one batch of them."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from reme_core.api import (
    FrontmatterError,
    Llm,
    LlmError,
    ProactiveTopics,
    Prompts,
    content_hash,
    estimate_tokens,
    head_lines,
    note_expired,
    parse_note,
)

from .models import Answer, Rejected, answer_model
from .update import DAILY_NOTE

PART_OVERHEAD_TOKENS = 30
LEFT_OUT = frozenset({"archived", "superseded"})
"""The statuses of the daily notes a run does not take as evidence (``reme forget`` archives;
a revert of that makes the note active again, with the bytes it was read with). A note that
has expired (``expires:``, ``lifecycle.expire``) is left out as archived too, before the
``expire`` job writes the status into it."""


@dataclass(frozen=True)
class TopicsFile:
    topics: ProactiveTopics
    hash: str | None
    """The file's content hash (None: no file yet)."""


@dataclass(frozen=True)
class DailyNote:
    path: str
    hash: str
    text: str


def read_topics(reme: Any) -> TopicsFile:
    """The topics file as it is now; ProactiveError when it is malformed (nothing is replaced)."""
    _, absolute = reme.paths.resolve(ProactiveTopics.PATH, for_write=True)
    try:
        data = absolute.read_bytes()
    except FileNotFoundError:
        return TopicsFile(ProactiveTopics(), None)
    text = data.decode("utf-8", errors="replace")
    return TopicsFile(ProactiveTopics.parse(text), content_hash(data))


def changed_notes(
    reme: Any, read: dict[str, str], today: dt.date
) -> tuple[list[DailyNote], dict[str, str]]:
    """Daily notes (``daily/YYYY-MM-DD/*.md``) whose hash is not the one read, oldest first; and
    the ones that could not be read, with why. An archived (forgotten), superseded or, on
    ``today``, expired note is no evidence and is left out: archiving changes its bytes, which
    would otherwise read as news."""
    notes: list[DailyNote] = []
    problems: dict[str, str] = {}
    limit = reme.settings.index.max_file_bytes
    for rel in reme.paths.iter_files(suffixes=(".md",), exclude_globs=reme.settings.index.exclude):
        if DAILY_NOTE.match(rel) is None:
            continue
        absolute = reme.root / rel
        try:
            if absolute.stat().st_size > limit:
                problems[rel] = f"over the {limit}-byte limit (index.max_file_bytes)"
                continue
            data = absolute.read_bytes()
            text = data.decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            problems[rel] = f"cannot be read as UTF-8 text: {exc}"
            continue
        digest = content_hash(data)
        if read.get(rel) != digest and not _left_out(reme, rel, text, (digest, len(data)), today):
            notes.append(DailyNote(rel, digest, text))
    notes.sort(key=lambda n: n.path)  # daily/<day>/: by day, then name
    return notes, problems


def _left_out(reme: Any, rel: str, text: str, file: tuple[str, int], today: dt.date) -> bool:
    """Whether the note ``rel`` (``text``; ``file``: its hash and size) is no evidence."""
    try:
        note = parse_note(rel, text)
    except FrontmatterError:
        return False  # read as text, as before (the model sees what is there)
    if note.status in LEFT_OUT:
        return True
    return note_expired(reme, note.summary(*file), today)


def batches(notes: Sequence[DailyNote], budget: int) -> list[list[DailyNote]]:
    """Notes in order, packed under ``budget`` tokens (a note longer than that is shown cut)."""
    out: list[list[DailyNote]] = []
    used = budget + 1
    for note in notes:
        cost = min(estimate_tokens(note.text), budget) + PART_OVERHEAD_TOKENS
        if used + cost > budget and (not out or out[-1]):
            out.append([])
            used = 0
        out[-1].append(note)
        used += cost
    return out


def shown_topics(topics: ProactiveTopics, resolved_shown: int) -> ProactiveTopics:
    """The topics the model sees: every open and snoozed one, and the latest resolved ones (so
    a re-mention can bring one back)."""
    resolved = [t for t in topics.topics if t.state == "resolved"]
    resolved.sort(key=lambda t: t.last_seen, reverse=True)
    keep = {t.id for t in resolved[:resolved_shown]}
    return ProactiveTopics(
        topics=[t for t in topics.topics if t.state != "resolved" or t.id in keep]
    )


def ask(
    llm: Llm,
    prompts: Prompts,
    shown: ProactiveTopics,
    batch: list[DailyNote],
    *,
    budget: int,
    retries: int,
    output_retries: int | None,
) -> Answer:
    """The model's answer for one batch, validated against its notes and the shown topics;
    Rejected with the last reason once every attempt failed."""
    listed = "\n".join(
        f"- {t.id} [{t.state}] {t.text} (notes: {', '.join(t.notes)})" for t in shown.topics
    )
    notes = "\n\n".join(
        f'<note path="{n.path}">\n{head_lines(n.text, budget).rstrip()}\n</note>' for n in batch
    )
    messages = [
        {"role": "system", "content": prompts.render("system")},
        {
            "role": "user",
            "content": prompts.render(
                "user",
                topics=listed or "(none yet)",
                paths="\n".join(f"- {n.path}" for n in batch),
                notes=notes,
            ),
        },
    ]
    model = answer_model(frozenset(n.path for n in batch), frozenset(t.id for t in shown.topics))
    reason = "not attempted"
    for _ in range(retries + 1):
        try:
            return llm.structured(messages, model, max_retries=output_retries)
        except LlmError as exc:
            reason = f"model error: {exc}"
    raise Rejected(reason)
