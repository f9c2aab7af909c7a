"""Per-session progress in ``.reme/auto_memory/``: what has been turned into notes.

``line`` is the last transcript line a note (or a trivial verdict) accounts for; it advances only
after the note is written, so a failed model call leaves its turns pending for the next call.
``unsummarised`` remembers which lines each verbatim-excerpt note holds, so a later call with a
model can summarise them. ``pending_since`` is set while turns wait past ``line`` (deferred
until enough are pending, or left by a failed call): the time of the oldest one, so the
``auto_memory_flush`` job finds idle sessions without reading their transcripts. Written
atomically; losing it only means turns are processed again.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator, Set
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError, field_validator

from reme_core.api import atomic_write, named_lock
from reme_plugins.auto_memory.transcript import AutoMemoryError


class SessionCursor(BaseModel):
    line: int = Field(0, ge=0)
    unsummarised: dict[str, list[int]] = Field(default_factory=dict)
    """Note path -> transcript lines it holds only as a verbatim excerpt."""
    pending_since: dt.datetime | None = None
    """When the oldest turn after ``line`` was said; None when none is pending."""
    pipeline: str | None = None
    """The pipeline that left turns pending: the idle flush runs the session through it."""
    hint: str | None = None
    """The hint of the call that left them (the call that summarises them may have none)."""

    @field_validator("pending_since")
    @classmethod
    def _aware(cls, value: dt.datetime | None) -> dt.datetime | None:
        # A hand-edited time without an offset is read as UTC, so times always compare.
        return value.replace(tzinfo=dt.UTC) if value and value.tzinfo is None else value

    def mark_unsummarised(self, path: str, lines: list[int]) -> None:
        self.unsummarised[path] = sorted(set(self.unsummarised.get(path, [])) | set(lines))

    def mark_summarised(self, path: str, lines: list[int]) -> None:
        left = sorted(set(self.unsummarised.get(path, [])) - set(lines))
        if left:
            self.unsummarised[path] = left
        else:
            self.unsummarised.pop(path, None)


def cursor_file(state_dir: Path, kind: str, session_id: str) -> Path:
    return state_dir / "auto_memory" / kind / f"{session_id}.json"


def load_cursor(state_dir: Path, session_id: str) -> SessionCursor:
    path = cursor_file(state_dir, "sessions", session_id)
    data = read_state(path)
    if data is None:
        return SessionCursor()
    try:
        return SessionCursor.model_validate(data)
    except ValidationError:
        raise AutoMemoryError(
            f"{path} is not a valid auto_memory cursor; delete it to process the session's "
            "turns again (notes are updated, not duplicated)"
        ) from None


def save_cursor(state_dir: Path, session_id: str, cursor: SessionCursor) -> None:
    write_state(cursor_file(state_dir, "sessions", session_id), cursor.model_dump(mode="json"))


def pending_sessions(state_dir: Path) -> Iterator[tuple[str, SessionCursor]]:
    """Sessions whose cursor records pending turns, oldest first; unreadable cursors are skipped
    (the session's own next call reports them)."""
    found: list[tuple[dt.datetime, str, SessionCursor]] = []
    for path in (state_dir / "auto_memory" / "sessions").glob("*.json"):
        try:
            cursor = load_cursor(state_dir, path.stem)
        except AutoMemoryError:
            continue
        if cursor.pending_since is not None:
            found.append((cursor.pending_since, path.stem, cursor))
    for _, session_id, cursor in sorted(found, key=lambda item: (item[0], item[1])):
        yield session_id, cursor


def forget_notes(state_dir: Path, paths: Set[str]) -> list[Path]:
    """Drop purged notes from every session cursor's ``unsummarised``; the cursors changed."""
    changed = []
    for path in sorted((state_dir / "auto_memory" / "sessions").glob("*.json")):
        with named_lock(state_dir, f"auto_memory:{path.stem}"):  # the session's own lock
            try:
                cursor = load_cursor(state_dir, path.stem)
            except AutoMemoryError:
                continue
            if not set(cursor.unsummarised) & paths:
                continue
            for rel in paths:
                cursor.unsummarised.pop(rel, None)
            save_cursor(state_dir, path.stem, cursor)
        changed.append(path)
    return changed


def read_state(path: Path) -> dict | None:
    """A small JSON state file, or None when absent."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise AutoMemoryError(f"cannot read {path}: {exc.strerror}") from exc
    try:
        data = json.loads(text)
    except ValueError:
        raise AutoMemoryError(f"{path} is not valid JSON; delete it to start over") from None
    if not isinstance(data, dict):
        raise AutoMemoryError(f"{path} must hold a JSON object; delete it to start over")
    return data


def write_state(path: Path, data: dict) -> None:
    atomic_write(path, (json.dumps(data, ensure_ascii=False, indent=1) + "\n").encode("utf-8"))
