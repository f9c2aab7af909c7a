from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from reme_core.schema.globs import InvalidGlobError, check_glob
from reme_core.schema.note import NoteStatus

MAX_PATH_FILTERS = 64
"""Most path filters in one search (each is matched against every candidate note)."""


class SearchFilters(BaseModel):
    """Filters applied inside every search arm, before ranking."""

    model_config = ConfigDict(extra="forbid")

    paths: list[str] = Field(default_factory=list, max_length=MAX_PATH_FILTERS)
    """Path prefixes or glob patterns (``daily/**``); a hit must match one."""
    tags: list[str] = Field(default_factory=list)
    tag_mode: Literal["any", "all"] = "any"
    since: dt.date | None = None
    until: dt.date | None = None
    statuses: list[NoteStatus] = Field(default_factory=lambda: ["active"])

    @field_validator("paths")
    @classmethod
    def _globs_within_limits(cls, paths: list[str]) -> list[str]:
        # Refused here, at the boundary, so HTTP and MCP answer 422 and the CLI one line.
        for pattern in paths:
            try:
                check_glob(pattern)
            except InvalidGlobError as exc:
                raise ValueError(str(exc)) from None
        return paths


class SearchHit(BaseModel):
    chunk_id: str
    path: str
    start_line: int
    end_line: int
    score: float = Field(ge=0.0, le=1.0)
    """Fused score normalised to 0..1 (1 = ranked first by every arm that ran)."""
    text: str
    heading: str = ""
    name: str | None = None
    arm_ranks: dict[str, int] = Field(default_factory=dict)
    """1-based rank of this chunk in each arm that found it."""
    arm_scores: dict[str, float] = Field(default_factory=dict)
    """Each arm's own score for this chunk (BM25 score; cosine similarity for vectors)."""
    superseded_by: str | None = None
    """When the hit's note is superseded (searched for with ``statuses`` naming superseded):
    the note that replaces it, as its frontmatter ``superseded_by`` names it (``[[...]]``)."""


class LinkedNote(BaseModel):
    """A note one link away from a hit (link expansion)."""

    path: str
    via: str
    """The hit's path this note is linked from or to."""
    direction: Literal["outbound", "inbound"]
    name: str | None = None
    description: str | None = None


class SearchResponse(BaseModel):
    query: str
    hits: list[SearchHit]
    linked: list[LinkedNote] = Field(default_factory=list)
    arms: list[str]
    """The arms that ran, e.g. ``["keyword"]`` or ``["keyword", "vector"]``."""
    degraded: list[str] = Field(default_factory=list)
    """Arms that were configured but could not run, with the reason."""
    meaning_only: bool = False
    """The keyword arm ran and no note holds any word of the query, so every hit was found by
    the vector arm alone: the nearest notes in meaning, which may be nothing relevant (a
    nonsense query still has nearest neighbours)."""
    no_match: bool = False
    """Nothing relevant was found: no hit, or hits that are only the nearest notes to a query
    nothing answers (a nonsense word, a question the workspace never touches). Read from the
    arms' own evidence (reme_core.search.abstention; calibrated per embedding model by
    benchmarks/abstention.py); the hits are returned unchanged either way."""
