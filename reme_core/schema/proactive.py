"""The follow-up topics file ``daily/_proactive.yaml`` and the note rendered from it.

The proactive pipeline (``reme_plugins.proactive``) keeps the file; the core reads it for
``GET /api/v1/proactive``, ``reme proactive list``, the MCP resource and prompt, and the studio.
One model for both sides, so a file the pipeline writes is exactly what every reader accepts.

Ids are assigned by code (``topic_id``), never by a model: the same question first seen in the
same note gets the same id, so ids stay stable across runs, reverts and re-runs.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from typing import Any, ClassVar, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from reme_core.errors import RemeError

TOPICS_PATH = "daily/_proactive.yaml"
"""The topics, one entry each (every state)."""
NOTE_PATH = "daily/_proactive.md"
"""What is worth raising next time: the open topics, for an agent to read at session start."""
TopicState = Literal["open", "resolved", "snoozed"]
TOPIC_STATES: tuple[str, ...] = ("open", "resolved", "snoozed")
_ID = re.compile(r"^t[0-9a-f]{8}(-[0-9]+)?$")
_LINK = re.compile(r"^\[\[[^\[\]|#]+\]\]$")
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
HEADER = (
    "# Follow-up topics kept by the proactive pipeline (`reme proactive run`); ids are reme's.\n"
    "# state: open | resolved | snoozed. daily/_proactive.md lists what is raised next time.\n"
)


class ProactiveError(RemeError):
    """The topics file cannot be read as topics (the message names the file and the problem)."""


def topic_id(text: str, note: str, taken: set[str] | frozenset[str] = frozenset()) -> str:
    """The id of a topic first seen as ``text`` in ``note``: a hash of both, with ``-N`` added
    when another topic already holds it."""
    words = " ".join(text.lower().split())
    base = "t" + hashlib.sha256(f"{note}\n{words}".encode()).hexdigest()[:8]
    found, n = base, 1
    while found in taken:
        n += 1
        found = f"{base}-{n}"
    return found


def _day(value: Any) -> Any:
    if isinstance(value, dt.date):  # YAML reads 2026-11-02 as a date
        return value.isoformat()
    if isinstance(value, str) and _DAY.match(value):
        dt.date.fromisoformat(value)  # a day that does not exist is a ValueError
    return value


class ProactiveTopic(BaseModel):
    """One follow-up: a question to ask again or a task to check on."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=_ID.pattern)
    text: str = Field(min_length=1, max_length=500)
    """The question or task, in one line."""
    kind: Literal["question", "task"] = "question"
    state: TopicState = "open"
    notes: list[str] = Field(min_length=1)
    """The daily notes it came from and was mentioned in, as ``[[links]]``, oldest first."""
    first_seen: str = Field(pattern=_DAY.pattern)
    last_seen: str = Field(pattern=_DAY.pattern)
    resolved_by: str | None = None
    """State resolved: the note that resolved it (``[[link]]``)."""
    resolution: str | None = None
    """State resolved: how, in one line."""
    snoozed_until: str | None = Field(None, pattern=_DAY.pattern)
    """State snoozed: the day it is raised again."""

    @field_validator("first_seen", "last_seen", "snoozed_until", mode="before")
    @classmethod
    def _days(cls, value: Any) -> Any:
        return _day(value)

    @field_validator("notes")
    @classmethod
    def _links(cls, notes: list[str]) -> list[str]:
        bad = [n for n in notes if not _LINK.match(n)]
        if bad:
            raise ValueError(f"notes must be [[links]], got {bad[0]!r}")
        return notes

    @field_validator("resolved_by")
    @classmethod
    def _link(cls, value: str | None) -> str | None:
        if value is not None and not _LINK.match(value):
            raise ValueError(f"resolved_by must be a [[link]], got {value!r}")
        return value

    def raised(self, today: str) -> bool:
        """Whether it is worth raising on ``today``: open, or snoozed until then or before."""
        if self.state == "snoozed":
            return self.snoozed_until is not None and self.snoozed_until <= today
        return self.state == "open"


class ProactiveTopics(BaseModel):
    """The whole file."""

    model_config = ConfigDict(extra="forbid")
    PATH: ClassVar[str] = TOPICS_PATH
    NOTE_PATH: ClassVar[str] = NOTE_PATH

    version: Literal[1] = 1
    updated: str | None = None
    """When the pipeline last changed it (ISO time in the workspace's zone)."""
    topics: list[ProactiveTopic] = Field(default_factory=list)

    @field_validator("topics")
    @classmethod
    def _unique(cls, topics: list[ProactiveTopic]) -> list[ProactiveTopic]:
        seen: set[str] = set()
        for topic in topics:
            if topic.id in seen:
                raise ValueError(f"topic id {topic.id!r} appears twice")
            seen.add(topic.id)
        return topics

    @classmethod
    def parse(cls, text: str | None, path: str = TOPICS_PATH) -> ProactiveTopics:
        """The topics in ``text`` (None or empty: no topics yet); ProactiveError if malformed."""
        if text is None or not text.strip():
            return cls()
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ProactiveError(f"{path} is not valid YAML: {exc}") from None
        if data is None:
            return cls()
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(map(str, first["loc"])) or "the file"
            raise ProactiveError(f"{path}: {where}: {first['msg']}") from None

    def dump(self) -> str:
        """The file's text (YAML, a header comment first)."""
        data = self.model_dump(mode="json", exclude_none=True)
        body = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
        return HEADER + body

    def get(self, topic: str) -> ProactiveTopic | None:
        return next((t for t in self.topics if t.id == topic), None)

    def to_raise(self, today: str) -> list[ProactiveTopic]:
        """The topics worth raising on ``today``, most recently mentioned first."""
        found = [t for t in self.topics if t.raised(today)]
        return sorted(found, key=lambda t: (t.last_seen, t.first_seen), reverse=True)

    def render_note(self, today: str, limit: int = 10) -> str:
        """``daily/_proactive.md``: the topics to raise, newest first, at most ``limit``. Its text
        changes only with the topics (or a snooze falling due on ``today``), so a run with nothing
        new leaves it, and the history, as they are."""
        raised = self.to_raise(today)
        lines = [
            "---",
            "name: Follow-ups to raise",
            "description: Open questions and tasks from recent daily notes, for the next session.",
            f"updated: {self.updated[:10] if self.updated else today}",
            "---",
            "",
            "# Follow-ups to raise",
            "",
        ]
        if not raised:
            lines.append("Nothing open: every follow-up is resolved.")
        for topic in raised[:limit]:
            since = f"since {topic.first_seen}, last {topic.last_seen}"
            lines.append(f"- {topic.text} ({topic.kind}, `{topic.id}`, {since}): {topic.notes[-1]}")
        if len(raised) > limit:
            more = len(raised) - limit
            lines += ["", f"{more} more open in [[{TOPICS_PATH}]]."]
        return "\n".join(lines) + "\n"
