from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from pydantic import BaseModel, Field

NoteStatus = Literal["active", "archived", "superseded"]
NOTE_STATUSES: tuple[str, ...] = ("active", "archived", "superseded")


class NoteSummary(BaseModel):
    """What the catalog knows about one indexed file."""

    path: str
    content_hash: str
    size: int
    name: str | None = None
    description: str | None = None
    status: NoteStatus = "active"
    date: dt.date | None = None
    tags: list[str] = Field(default_factory=list)
    frontmatter: dict[str, Any] = Field(default_factory=dict)
