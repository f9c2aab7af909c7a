"""What each file tool returns: pydantic models, so the API and MCP layers can serialise them."""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from pydantic import BaseModel, Field


class ReadResult(BaseModel):
    path: str
    content: str
    """The requested lines, newlines included."""
    start_line: int
    end_line: int
    """Last line included (start_line - 1 when nothing was returned)."""
    total_lines: int
    size: int
    content_hash: str
    """sha256 of the whole file, to pass back as ``expected_hash``."""
    truncated: bool = False
    next_start_line: int | None = None
    hint: str | None = None


class WriteResult(BaseModel):
    path: str
    content_hash: str
    before_hash: str | None = None
    created: bool = False
    changed: bool = True
    size: int


class EditResult(BaseModel):
    path: str
    content_hash: str
    before_hash: str
    replacements: int


class FrontmatterResult(BaseModel):
    path: str
    content_hash: str
    before_hash: str
    changed: bool
    frontmatter: dict[str, Any] = Field(default_factory=dict)


class MoveResult(BaseModel):
    path: str
    """The old path."""
    to: str
    content_hash: str
    rewritten: list[str] = Field(default_factory=list)
    """Other notes whose links were rewritten to point at the new path."""


class DeleteResult(BaseModel):
    path: str
    content_hash: str
    """Hash of the content that was deleted (kept in the journal as ``before_hash``)."""
    inbound: list[str] = Field(default_factory=list)
    """Notes that still link to the deleted path: their links now dangle."""


class LsEntry(BaseModel):
    path: str
    kind: Literal["file", "dir"]
    size: int | None = None


class LsResult(BaseModel):
    path: str
    entries: list[LsEntry] = Field(default_factory=list)
    truncated: bool = False


class StatResult(BaseModel):
    path: str
    size: int
    content_hash: str
    modified: dt.datetime
    line_count: int
    is_note: bool
    frontmatter: dict[str, Any] | None = None
    frontmatter_error: str | None = None
    """Why the frontmatter could not be read, when the note's YAML is malformed."""
