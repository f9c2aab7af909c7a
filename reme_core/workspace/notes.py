"""The Note model: frontmatter, body, and the fields every index derives from them."""

from __future__ import annotations

import datetime as dt
import posixpath
import re
from typing import Any

from pydantic import BaseModel, Field

from reme_core.errors import FrontmatterError
from reme_core.schema.note import NOTE_STATUSES, NoteStatus, NoteSummary
from reme_core.workspace.frontmatter import parse_frontmatter, split_frontmatter

_DATE_PREFIX = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(?!\d)")
_TAG_SPLIT = re.compile(r"[,\s]+")


class Note(BaseModel):
    """One parsed Markdown note. ``name`` falls back to the file stem when frontmatter has none."""

    path: str
    frontmatter: dict[str, Any] = Field(default_factory=dict)
    body: str = ""
    body_start_line: int = 1
    name: str
    description: str | None = None
    status: NoteStatus = "active"
    tags: list[str] = Field(default_factory=list)
    date: dt.date | None = None

    def summary(self, content_hash: str, size: int) -> NoteSummary:
        """The catalog's view of this note."""
        return NoteSummary(
            path=self.path,
            content_hash=content_hash,
            size=size,
            name=self.name,
            description=self.description,
            status=self.status,
            date=self.date,
            tags=list(self.tags),
            frontmatter=dict(self.frontmatter),
        )


def parse_note(path: str, text: str) -> Note:
    """Parse a note; malformed frontmatter or an unknown status -> FrontmatterError."""
    fm, body_start_line = parse_frontmatter(text, path)
    block = split_frontmatter(text, path)
    body = text[block.body_start :] if block is not None else text
    return Note(
        path=path,
        frontmatter=fm,
        body=body,
        body_start_line=body_start_line,
        name=_name(path, fm),
        description=_text_or_none(fm.get("description")),
        status=normalise_status(fm.get("status"), path),
        tags=normalise_tags(fm.get("tags"), path),
        date=note_date(path, fm.get("date")),
    )


def _text_or_none(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def _name(path: str, fm: dict[str, Any]) -> str:
    name = _text_or_none(fm.get("name"))
    if name:
        return name
    stem = posixpath.basename(path)
    return stem[:-3] if stem.lower().endswith(".md") else stem


def normalise_status(value: Any, path: str = "<note>") -> NoteStatus:
    """Map a frontmatter ``status`` onto the allowed values; absent means active."""
    if value is None or (isinstance(value, str) and value.strip() == ""):
        return "active"
    status = str(value).strip().lower()
    if status not in NOTE_STATUSES:
        raise FrontmatterError(f"{path}: status {value!r} is not one of {', '.join(NOTE_STATUSES)}")
    return status  # type: ignore[return-value]


def normalise_tags(value: Any, path: str = "<note>") -> list[str]:
    """Tags from a YAML list or a comma/space separated string: no '#', lowercase, unique."""
    if value is None:
        return []
    if isinstance(value, str):
        items: list[Any] = _TAG_SPLIT.split(value)
    elif isinstance(value, (list, tuple)):
        items = list(value)
    elif isinstance(value, (int, float)):
        items = [value]
    else:
        raise FrontmatterError(
            f"{path}: tags must be a list or a comma-separated string, not a {type(value).__name__}"
        )
    tags: list[str] = []
    for item in items:
        if item is None:
            continue
        tag = str(item).strip().lstrip("#").strip().lower()
        if tag and tag not in tags:
            tags.append(tag)
    return tags


def note_date(path: str, value: Any = None) -> dt.date | None:
    """Frontmatter ``date``, else a ``YYYY-MM-DD`` file or folder name (nearest first)."""
    parsed = _coerce_date(value)
    if parsed is not None:
        return parsed
    for part in reversed(path.split("/")):
        found = _DATE_PREFIX.match(part)
        if found:
            try:
                return dt.date(*(int(g) for g in found.groups()))
            except ValueError:
                continue
    return None


def _coerce_date(value: Any) -> dt.date | None:
    # An unparseable frontmatter date is treated as absent rather than blocking the note.
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        found = _DATE_PREFIX.match(value.strip())
        if found:
            try:
                return dt.date(*(int(g) for g in found.groups()))
            except ValueError:
                return None
    return None
