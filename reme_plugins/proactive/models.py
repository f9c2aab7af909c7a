"""What the model may answer (pydantic, validated by instructor), and the run's params.

The model proposes; it never assigns an id, never writes a state and never drops a topic. A new
topic names its text and the notes it came from; a resolution, a re-mention or a snooze names an
existing topic by id and the note that says so. ``answer_model`` builds the response model of one
run, whose validators refuse ids and notes not in the prompt, so instructor feeds the reason
back; ``update.verify`` checks the result again in code, whatever the model's library did.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from reme_core.api import RemeError


class Rejected(RemeError):
    """The model's answer breaks the rules; nothing is written and the notes wait for a retry."""


class ProactiveParams(BaseModel):
    """The params a caller may give; other state is ignored."""

    model_config = ConfigDict(extra="ignore")

    dry_run: bool = False
    """Ask and verify, but write nothing and advance nothing."""
    today: str | None = None
    """The day the note is written for (``YYYY-MM-DD``; default today in the workspace's zone):
    which snoozed topics are due."""

    @field_validator("today", mode="before")
    @classmethod
    def _today(cls, value: Any) -> Any:
        if isinstance(value, dt.date):
            return value.isoformat()
        if value is not None:
            dt.date.fromisoformat(str(value))
        return value

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> ProactiveParams:
        try:
            return cls.model_validate(state)
        except ValidationError as exc:
            raise RemeError(f"proactive params: {exc.errors()[0]['msg']}") from None


class NewTopic(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=3, max_length=300)
    """The open question or task, in one line."""
    kind: Literal["question", "task"] = "question"
    notes: list[str] = Field(min_length=1)
    """The given notes it comes from (paths as given)."""


class TopicEvent(BaseModel):
    """Something a note says about an existing topic."""

    model_config = ConfigDict(extra="forbid")

    topic: str = Field(min_length=1)
    """The topic's id, as listed."""
    note: str = Field(min_length=1)
    """The given note that says so (a path as given)."""


class Resolution(TopicEvent):
    how: str = Field("", max_length=300)
    """One line: how it was resolved."""


class Snooze(TopicEvent):
    until: str
    """``YYYY-MM-DD``: the day the note asks to be reminded."""

    @field_validator("until", mode="before")
    @classmethod
    def _until(cls, value: Any) -> Any:
        if isinstance(value, dt.date):
            return value.isoformat()
        dt.date.fromisoformat(str(value))
        return str(value)


class Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    new: list[NewTopic] = Field(default_factory=list)
    resolved: list[Resolution] = Field(default_factory=list)
    mentioned: list[TopicEvent] = Field(default_factory=list)
    """Existing topics raised again (a resolved one comes back open)."""
    snoozed: list[Snooze] = Field(default_factory=list)


def note_path(path: str) -> str:
    """A path as the model may write it (``[[x]]``, ``./x``, no ``.md``) made plain."""
    text = path.strip()
    if text.startswith("[[") and text.endswith("]]"):
        text = text[2:-2].split("|", 1)[0].split("#", 1)[0].strip()
    text = text.replace("\\", "/").removeprefix("./").lstrip("/")
    return text if text.lower().endswith(".md") else text + ".md"


def link(path: str) -> str:
    """The ``[[link]]`` written for a note path (without ``.md``, as Obsidian writes it)."""
    return f"[[{path[:-3] if path.endswith('.md') else path}]]"


def answer_model(notes: frozenset[str], topics: frozenset[str]) -> type[Answer]:
    """The response model of one call: only the given notes and listed topic ids are accepted."""

    class CheckedAnswer(Answer):
        @model_validator(mode="after")
        def _known(self) -> CheckedAnswer:
            for new in self.new:
                new.notes = [_given(n, notes) for n in new.notes]
            for event in [*self.resolved, *self.mentioned, *self.snoozed]:
                if event.topic not in topics:
                    listed = ", ".join(sorted(topics)) or "none"
                    raise ValueError(
                        f"topic {event.topic!r} does not exist (listed topics: {listed}); "
                        "a new question goes under `new`"
                    )
                event.note = _given(event.note, notes)
            return self

    CheckedAnswer.__name__ = "Answer"
    return CheckedAnswer


def _given(raw: str, notes: frozenset[str]) -> str:
    path = note_path(raw)
    if path not in notes:
        raise ValueError(
            f"{raw!r} is not one of the notes given ({', '.join(sorted(notes))}); cite the "
            "note that says so by its path"
        )
    return path
