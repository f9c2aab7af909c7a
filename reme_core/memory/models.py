"""Memory records and their scope: the pydantic shapes the API, the operations and the CLI share.

A record belongs to exactly one scope, and the scope decides its type: a ``user_name`` holds
personal memories, a ``task_name`` procedural ones, a ``tool_name`` tool guidance. Every read
checks a record's own frontmatter against the scope asked for, so the scope is part of a
record's identity, not a search hint.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from reme_core.components import LlmUsage
from reme_core.errors import WorkspaceError
from reme_core.schema.note import NOTE_STATUSES, NoteStatus

__all__ = [  # what ``reme_core.memory`` exports, beside ``MemoryApi``
    "MemoryChange",
    "MemoryDeletion",
    "MemoryFilters",
    "MemoryHit",
    "MemoryList",
    "MemoryMessage",
    "MemoryRecord",
    "MemoryRetrieval",
    "MemoryScope",
    "MemorySummary",
    "MemoryType",
]

MemoryType = Literal["personal", "procedural", "tool"]
ScopeKey = Literal["user_name", "task_name", "tool_name"]

SCOPE_KEYS: dict[MemoryType, ScopeKey] = {
    "personal": "user_name",
    "procedural": "task_name",
    "tool": "tool_name",
}
TYPE_OF_KEY: dict[str, MemoryType] = {key: kind for kind, key in SCOPE_KEYS.items()}

MAX_SCOPE_CHARS = 200
MEMORY_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def check_memory_id(memory_id: str) -> str:
    """A memory id is a file name as well: letters, digits, ``-`` and ``_`` only."""
    if not isinstance(memory_id, str) or not MEMORY_ID.match(memory_id):
        raise WorkspaceError(
            f"memory id {memory_id!r} is not valid: 1-64 letters, digits, '-' or '_', "
            "as returned by add"
        )
    return memory_id


class MemoryScope(BaseModel):
    """Exactly one of ``user_name``, ``task_name`` or ``tool_name``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    user_name: str | None = None
    task_name: str | None = None
    tool_name: str | None = None

    @field_validator("user_name", "task_name", "tool_name")
    @classmethod
    def _clean(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = value.strip()
        if not value:
            return None  # an empty name is no scope; the check below then says which is needed
        if len(value) > MAX_SCOPE_CHARS:
            raise ValueError(f"a scope name is at most {MAX_SCOPE_CHARS} characters")
        if _CONTROL.search(value):
            raise ValueError("a scope name may not contain line breaks or control characters")
        return value

    @model_validator(mode="after")
    def _exactly_one(self) -> MemoryScope:
        given = [key for key in SCOPE_KEYS.values() if getattr(self, key) is not None]
        if len(given) != 1:
            found = ", ".join(given) if given else "none"
            raise ValueError(
                "a memory scope needs exactly one of user_name (personal), task_name "
                f"(procedural) or tool_name (tool); got {found}"
            )
        return self

    @classmethod
    def of(
        cls,
        user_name: str | None = None,
        task_name: str | None = None,
        tool_name: str | None = None,
    ) -> MemoryScope:
        """The scope, or a WorkspaceError (a caller's mistake) saying what is wrong."""
        try:
            return cls(user_name=user_name, task_name=task_name, tool_name=tool_name)
        except ValidationError as exc:
            problems = "; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors())
            raise WorkspaceError(problems) from None

    @property
    def key(self) -> ScopeKey:
        return next(key for key in SCOPE_KEYS.values() if getattr(self, key) is not None)

    @property
    def value(self) -> str:
        value = getattr(self, self.key)
        assert isinstance(value, str)
        return value

    @property
    def memory_type(self) -> MemoryType:
        return TYPE_OF_KEY[self.key]

    def describe(self) -> str:
        return f"{self.key}={self.value}"

    def matches(self, frontmatter: dict[str, Any]) -> bool:
        """Whether a note's frontmatter puts it in this scope: type and name, compared exactly."""
        value = frontmatter.get(self.key)
        return (
            frontmatter.get("memory_type") == self.memory_type
            and isinstance(value, str)
            and value.strip() == self.value
        )


class MemoryRecord(BaseModel):
    """One memory, as stored in its note (``path``) and returned by every read."""

    memory_id: str
    memory_type: MemoryType
    user_name: str | None = None
    task_name: str | None = None
    tool_name: str | None = None
    content: str
    when_to_use: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Free-form; tool records carry ``success_rate`` (0..1), ``avg_cost``, ``cost_unit``,
    ``tips``; procedural ones an ``outcome``."""
    created: dt.datetime
    updated: dt.datetime
    sources: list[str] = Field(default_factory=list)
    """Link targets (``sessions/s1.jsonl``), written as ``[[wikilinks]]`` in the note."""
    status: NoteStatus = "active"
    superseded_by: str | None = None
    """For a ``superseded`` record: the id of the record that replaced its statement (an update
    of the content keeps the old statement as ``<id>-v<N>``, superseded by ``<id>``)."""
    path: str
    content_hash: str
    """sha256 of the note: pass it back as ``expected_hash`` to update or delete safely."""

    @property
    def scope(self) -> MemoryScope:
        return MemoryScope(
            user_name=self.user_name, task_name=self.task_name, tool_name=self.tool_name
        )


class ToolMetadata(BaseModel):
    """The metadata keys tool records give meaning to; others are kept as given."""

    model_config = ConfigDict(extra="allow")

    success_rate: float | None = Field(None, ge=0, le=1)
    avg_cost: float | None = Field(None, ge=0)
    cost_unit: str | None = None
    tips: list[str] | None = None


class MemoryFilters(BaseModel):
    """What ``list`` keeps, within the scope it is given."""

    model_config = ConfigDict(extra="forbid")

    text: str | None = None
    """Case-insensitive substring of the content or ``when_to_use``."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Metadata keys that must equal these values."""
    since: dt.datetime | None = None
    """Updated at or after (a date means its midnight, UTC)."""
    until: dt.datetime | None = None
    """Updated at or before (a date means the end of that day, UTC)."""
    statuses: list[NoteStatus] = Field(default_factory=lambda: ["active"])

    @field_validator("until", mode="before")
    @classmethod
    def _whole_day(cls, value: Any) -> Any:
        # "--until 2026-11-02" includes that day, as a person reading it expects.
        if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
            return dt.datetime.combine(value, dt.time.max)
        if isinstance(value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value.strip()):
            return f"{value.strip()}T23:59:59.999999"
        return value


class MemoryMessage(BaseModel):
    """One message to summarize, in the OpenAI chat shape: content is text or a list of parts
    (text parts are kept, images and the like left out); ``name`` names a tool's result and
    ``tool_calls`` the calls an assistant made (their arguments teach parameter tips). Other
    keys are ignored, so a transcript can be passed as the agent holds it."""

    model_config = ConfigDict(extra="ignore")

    role: Literal["system", "user", "assistant", "tool"]
    content: str | list[Any] | None = None
    name: str | None = None
    tool_calls: list[Any] | None = None

    @property
    def text(self) -> str:
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content.strip()
        parts = []
        for part in self.content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "\n".join(p.strip() for p in parts if p.strip())


SORT_FIELDS = ("created", "updated", "memory_id", "when_to_use", "content")


def check_sort_key(sort_key: str) -> str:
    """One of ``SORT_FIELDS`` or ``metadata.<key>``."""
    if sort_key in SORT_FIELDS or (sort_key.startswith("metadata.") and len(sort_key) > 9):
        return sort_key
    raise WorkspaceError(
        f"cannot sort memories by {sort_key!r}: use one of {', '.join(SORT_FIELDS)} "
        "or metadata.<key>"
    )


def check_statuses(statuses: Sequence[str]) -> list[NoteStatus]:
    wanted = list(dict.fromkeys(statuses))
    if not wanted:
        raise WorkspaceError("statuses is empty: name at least one of active, archived, superseded")
    bad = [s for s in wanted if s not in NOTE_STATUSES]
    if bad:
        raise WorkspaceError(f"unknown status {bad[0]!r}: use active, archived or superseded")
    return wanted  # type: ignore[return-value]  # checked against NOTE_STATUSES above


# -- results -------------------------------------------------------------------------------


class Recorded(BaseModel):
    """Where a change went in the workspace's version history."""

    history: str | None = None
    """The history commit (``reme revert`` takes it); None when none was made."""
    history_error: str | None = None
    """Why no commit was made (git missing, say); the change itself is written."""


class MemoryChange(Recorded):
    action: Literal["added", "updated", "unchanged", "deleted"]
    record: MemoryRecord
    """The record after the change (for ``deleted``, as it was)."""
    superseded: MemoryRecord | None = None
    """``updated`` with new content: the statement it replaced, kept as a superseded record."""
    versions: list[str] = Field(default_factory=list)
    """``deleted``: the ids of the record's superseded versions, deleted with it."""


class MemoryList(BaseModel):
    records: list[MemoryRecord] = Field(default_factory=list)
    total: int = 0
    """Records that passed the filters, before ``limit``."""
    problems: dict[str, str] = Field(default_factory=dict)
    """Notes in the scope's folder that could not be read as records, and why."""


class MemoryHit(BaseModel):
    score: float
    record: MemoryRecord


class MemoryRetrieval(BaseModel):
    query: str
    hits: list[MemoryHit] = Field(default_factory=list)
    """A hit whose record is superseded (asked for with ``statuses``) names the newer one in
    ``record.superseded_by``."""
    arms: list[str] = Field(default_factory=list)
    degraded: list[str] = Field(default_factory=list)


class MemoryDeletion(Recorded):
    deleted: list[str] = Field(default_factory=list)
    """Ids of the records deleted."""
    paths: list[str] = Field(default_factory=list)


class SkippedDraft(BaseModel):
    content: str
    reason: str


class MemorySummary(Recorded):
    added: list[MemoryRecord] = Field(default_factory=list)
    updated: list[MemoryRecord] = Field(default_factory=list)
    superseded: list[MemoryRecord] = Field(default_factory=list)
    """The statements the updates replaced, kept as superseded records."""
    unchanged: list[str] = Field(default_factory=list)
    """Ids of existing records the model repeated without changing."""
    skipped: list[SkippedDraft] = Field(default_factory=list)
    """Memories the model proposed that could not be written, with the reason."""
    warnings: list[str] = Field(default_factory=list)
    usage: LlmUsage = Field(default_factory=LlmUsage)
    """The model calls and tokens this summary spent."""
    proposals: list[str] = Field(default_factory=list)
    """``memory.review: queue``: ids of the MEMORY proposals made instead of writing records
    (``added`` and ``updated`` stay empty)."""
