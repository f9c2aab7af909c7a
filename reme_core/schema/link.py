from __future__ import annotations

from typing import Literal

from pydantic import BaseModel


class Link(BaseModel):
    """One wikilink as written in ``source`` and, when resolvable, the path it points at."""

    source: str
    raw: str
    """The link target exactly as written, without ``#anchor`` or ``|alias``."""
    target: str | None = None
    """Resolved workspace-relative path; None when missing or ambiguous."""
    anchor: str | None = None
    alias: str | None = None
    embed: bool = False
    line: int = 1
    state: Literal["resolved", "missing", "ambiguous"] = "resolved"
