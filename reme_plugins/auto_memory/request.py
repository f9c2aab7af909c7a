"""The auto_memory step's settings and its validated params."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field

from reme_core.api import ComponentSettings, redact
from reme_plugins.auto_memory.transcript import (
    MAX_HINT_CHARS,
    AutoMemoryError,
    Message,
    check_session_id,
    parse_messages,
    parse_timestamp,
)


class AutoMemorySettings(ComponentSettings):
    mode: Literal["structured", "agentic"] = "structured"
    """structured: one structured model call per batch, rendered into Markdown by code.
    agentic: the configured agent wrapper edits the note itself, confined to that one path."""
    max_prompt_tokens: int = Field(12_000, ge=1_000)
    """Turns beyond this budget go to further calls (each one updates the note)."""
    max_turn_chars: int = Field(4_000, ge=200)
    """A longer turn is cut in the prompt (it is saved whole in the transcript)."""
    context_turns: int = Field(6, ge=0)
    """Already-recorded turns shown before the new ones, so a follow-up makes sense."""
    excerpt_turns: int = Field(40, ge=1)
    """Without a model: turns quoted in a note's excerpt; later ones are linked, not quoted."""
    excerpt_chars: int = Field(600, ge=50)
    """Without a model: characters quoted per turn."""
    max_retries: int | None = Field(None, ge=0)
    """Validation retries per structured call; None = the model's own setting."""
    agent_max_turns: int = Field(12, ge=1, le=200)
    lock_timeout: float = Field(300.0, gt=0)
    """Seconds to wait for another run on the same session."""
    min_pending_turns: int = Field(1, ge=1, le=1000)
    """With a model: summarise once this many turns (messages) are pending; fewer are saved to
    the transcript and wait, so one model call covers several calls' turns (a Claude Code Stop
    hook adds about two per answer). 1 = summarise on every call."""
    flush_after_minutes: float = Field(30.0, gt=0, le=7 * 24 * 60)
    """...unless the oldest pending turn is older than this: then they are summarised anyway,
    by the next call or by the scheduled ``auto_memory_flush`` job."""


FLUSH_IDLE = "idle"


@dataclass(frozen=True)
class AutoMemoryRequest:
    session_id: str
    messages: list[Message]
    date: dt.date | None
    hint: str | None
    redacted: Counter[str]
    flush: bool = False
    """Summarise the pending turns now, however few and however recent."""
    now: dt.datetime | None = None
    """The time the age of pending turns is measured against; None = the current time."""

    @classmethod
    def from_state(cls, state: dict[str, Any], tz: dt.tzinfo) -> AutoMemoryRequest:
        """Check every param before anything is read or written."""
        session_id = check_session_id(state.get("session_id"))
        if "messages" not in state:
            raise AutoMemoryError(
                "auto_memory needs a `messages` param: a list of {role, content}, e.g. "
                "--param messages=@messages.json (an empty list processes pending turns)"
            )
        messages, redacted = parse_messages(state["messages"], tz)
        hint = state.get("hint")
        if hint is not None:
            if not isinstance(hint, str):
                raise AutoMemoryError("`hint` must be text")
            if len(hint) > MAX_HINT_CHARS:
                raise AutoMemoryError(f"`hint` is longer than {MAX_HINT_CHARS} characters")
            hint, found = redact(hint.strip())
            redacted.update(found)
        return cls(
            session_id,
            messages,
            _date(state.get("date")),
            hint or None,
            redacted,
            flush=flush_param(state.get("flush")) is True,
            now=now_param(state.get("now"), tz),
        )


def flush_param(value: Any) -> bool | str:
    """``flush``: true (this session now), false/absent, or ``idle`` (every session whose oldest
    pending turn is older than ``flush_after_minutes``)."""
    if value is None or isinstance(value, bool):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false", FLUSH_IDLE):
        word = value.strip().lower()
        return FLUSH_IDLE if word == FLUSH_IDLE else word == "true"
    raise AutoMemoryError(f"`flush` must be true, false or idle, not {str(value)[:40]!r}")


def now_param(value: Any, tz: dt.tzinfo) -> dt.datetime | None:
    """``now``: the reference time for ``flush_after_minutes`` (the scheduler passes its clock)."""
    return parse_timestamp(value, tz, "now")


def _date(value: Any) -> dt.date | None:
    if value is None or value == "":
        return None
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):  # --param date=2026-11-02 arrives as a date (YAML)
        return value
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value.strip())
        except ValueError:
            pass
    raise AutoMemoryError(f"`date` must be YYYY-MM-DD, not {str(value)[:40]!r}")
