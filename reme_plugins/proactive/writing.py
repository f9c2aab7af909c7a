"""Writing a verified change: the topics file, the note to raise, and the cursor after them.

The topics file is YAML, which the file tools (Markdown notes only) do not write: it is written
atomically here, after checking that it still has the hash the run read (a hand edit meanwhile
is a conflict, not overwritten). The run's history commit holds it with the note, so ``reme
revert`` undoes both; the cursor notices the revert by the file's hash (``cursor``).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from reme_core.api import (
    ConflictError,
    ProactiveTopics,
    atomic_write,
    content_hash,
    named_lock,
)

from .cursor import load_cursor, save_cursor
from .reading import read_topics

LOCK = "proactive"
"""Held while a run or an approval reads and writes the topics file and the cursor."""


def now(reme: Any) -> str:
    return dt.datetime.now(reme.settings.tzinfo()).isoformat(timespec="seconds")


def today(reme: Any) -> str:
    return dt.datetime.now(reme.settings.tzinfo()).date().isoformat()


def note_text(reme: Any, topics: ProactiveTopics, day: str, limit: int) -> tuple[str, str | None]:
    """The note to raise as it would be written, and the note's current hash (None: none)."""
    _, absolute = reme.paths.resolve(ProactiveTopics.NOTE_PATH, for_write=True)
    try:
        current: str | None = content_hash(absolute.read_bytes())
    except FileNotFoundError:
        current = None
    return topics.render_note(day, limit), current


def write_topics(reme: Any, topics: ProactiveTopics, expected: str | None) -> str:
    """Write the topics file if it still has hash ``expected``; returns the new hash."""
    found = read_topics(reme)
    if found.hash != expected:
        raise ConflictError(
            f"{ProactiveTopics.PATH} changed while the run read it; nothing was written "
            "(the next run reads it again)"
        )
    data = topics.dump().encode("utf-8")
    _, absolute = reme.paths.resolve(ProactiveTopics.PATH, for_write=True)
    atomic_write(absolute, data)
    return content_hash(data)


def write_note(reme: Any, text: str, expected: str | None) -> bool:
    """Write the note to raise (through the file tools: indexed, journaled); True if changed."""
    written = reme.files.write(ProactiveTopics.NOTE_PATH, text, expected_hash=expected)
    return bool(written.changed)


def advance(reme: Any, topics_hash: str | None, base: dict[str, str], read: dict[str, str]) -> None:
    """Record ``read`` (path -> hash) as read, with the topics file now at ``topics_hash``."""
    cursor = load_cursor(reme.state_dir)
    save_cursor(reme.state_dir, cursor.advanced(topics_hash, {**base, **read}, now(reme)))


def lock(reme: Any) -> Any:
    return named_lock(reme.state_dir, LOCK)
