"""``SessionMemory``: the messages of one agent session, held in memory between model calls.

Compacted messages stay in the object (marked compressed) so ``state_dict`` keeps the whole
session, but ``get_memory`` leaves them out and puts the running summary first. Messages are
kept raw: tool outputs are cut on the way to the model (``compact_tool_result``), not here. Raw messages
are appended to ``sessions/dialog/<date>.jsonl`` in the workspace when they are marked
compressed or when the memory is cleared, once each: one line per message,
``{"session_id", "saved_at", "message"}``, which the jsonl chunker indexes like a transcript.
Every string in a persisted message is redacted (``reme_core.redact``) on the way to the file;
the messages held in memory, and ``state_dict``, stay as the agent gave them.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, ValidationError, model_validator

from reme_core.light.messages import ContextError, call_ids, leading_system, validate_messages
from reme_core.light.tokens import TokenCounter
from reme_core.pipelines.prompts import Prompts
from reme_core.redact import redact_data

if TYPE_CHECKING:
    from reme_core.workspace.tools import FileTools

DIALOG_DIR = "sessions/dialog"
STATE_VERSION = 1


class MemoryUsage(BaseModel):
    """How full the context would be with ``get_memory()`` (plus an optional system prompt)."""

    max_input_length: int
    message_tokens: int
    """The messages not compressed."""
    summary_tokens: int
    """The summary message put first (0 without a summary)."""
    system_tokens: int = 0
    estimated_tokens: int
    """All of it together: what the next model call would read."""
    context_usage_ratio: float
    """``estimated_tokens / max_input_length``."""
    messages: int
    compressed_messages: int


class MemoryState(BaseModel):
    """What ``state_dict`` returns: plain JSON, checked again on load."""

    version: Literal[1] = STATE_VERSION
    session_id: str
    summary: str = ""
    messages: list[dict[str, Any]] = Field(default_factory=list)
    compressed: list[bool] = Field(default_factory=list)
    persisted: list[bool] = Field(default_factory=list)

    @model_validator(mode="after")
    def _aligned(self) -> MemoryState:
        if not len(self.messages) == len(self.compressed) == len(self.persisted):
            raise ValueError("messages, compressed and persisted must have the same length")
        return self


class SessionMemory:
    """The working memory of one session: messages, which are compressed, and the summary."""

    def __init__(
        self,
        counter: TokenCounter,
        prompts: Prompts,
        session_id: str,
        *,
        files: FileTools | None = None,
        tz: dt.tzinfo | None = None,
        summary_role: Literal["user", "system"] = "user",
    ):
        self.counter = counter
        self.prompts = prompts
        self.session_id = session_id
        self.files = files
        """Where raw messages are persisted; None keeps the memory purely in memory."""
        self.tz = tz
        # A user message by default: several chat templates refuse a system message that is
        # not the first one.
        self.summary_role = summary_role
        self.summary = ""
        self._messages: list[dict[str, Any]] = []
        self._compressed: list[bool] = []
        self._persisted: list[bool] = []

    # -- adding and reading ----------------------------------------------------------------------

    def add(self, messages: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> None:
        """Append one message or a list of messages (checked like every API input)."""
        batch = [messages] if isinstance(messages, Mapping) else list(messages)
        for message in validate_messages(batch):
            self._messages.append(message)
            self._compressed.append(False)
            self._persisted.append(False)

    def __len__(self) -> int:
        return len(self._messages)

    @property
    def messages(self) -> list[dict[str, Any]]:
        """Every message, compressed ones included, in order."""
        return list(self._messages)

    def active(self) -> list[dict[str, Any]]:
        """The messages not compressed, in order."""
        return [m for m, c in zip(self._messages, self._compressed, strict=True) if not c]

    def get_memory(self, prepend_summary: bool = True) -> list[dict[str, Any]]:
        """The messages not compressed, the summary first (after any leading system messages)."""
        return self.with_summary(self.active()) if prepend_summary else self.active()

    def with_summary(self, messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """``messages`` with the summary message put after their leading system messages."""
        out = [dict(m) for m in messages]
        if not self.summary.strip():
            return out
        at = leading_system(out)
        return [*out[:at], self.summary_message(), *out[at:]]

    def summary_message(self) -> dict[str, Any]:
        return {
            "role": self.summary_role,
            "content": self.prompts.render("summary_message", summary=self.summary.strip()),
        }

    def estimate_tokens(self, max_input_length: int, system_prompt: str = "") -> MemoryUsage:
        """Context usage of ``get_memory()`` against ``max_input_length`` tokens."""
        if max_input_length <= 0:
            raise ContextError(f"max_input_length must be positive, got {max_input_length}")
        message_tokens = self.counter.messages(self.active())
        summary_tokens = self.counter.message(self.summary_message()) if self.summary.strip() else 0
        system_tokens = (
            self.counter.message({"role": "system", "content": system_prompt})
            if system_prompt
            else 0
        )
        total = message_tokens + summary_tokens + system_tokens
        return MemoryUsage(
            max_input_length=max_input_length,
            message_tokens=message_tokens,
            summary_tokens=summary_tokens,
            system_tokens=system_tokens,
            estimated_tokens=total,
            context_usage_ratio=round(total / max_input_length, 4),
            messages=len(self._messages),
            compressed_messages=sum(self._compressed),
        )

    # -- compaction ------------------------------------------------------------------------------

    def mark_messages_compressed(self, compacted: Sequence[Mapping[str, Any]] | int) -> list[int]:
        """Mark the messages a compaction took (its ``to_compact``, or how many) as compressed.

        They are the earliest active messages after any leading system messages, since that is
        what ``check_context`` cuts; their roles and tool-call ids are checked against the
        given ones so a list from another memory is refused rather than marking the wrong ones.
        Returns the marked positions; the raw messages are persisted.
        """
        count = compacted if isinstance(compacted, int) else len(compacted)
        active = [i for i, compressed in enumerate(self._compressed) if not compressed]
        candidates = active[leading_system([self._messages[i] for i in active]) :]
        if count < 0 or count > len(candidates):
            raise ContextError(
                f"cannot mark {count} messages compressed: {len(candidates)} can be compacted"
            )
        chosen = candidates[:count]
        if not isinstance(compacted, int):
            for position, given in zip(chosen, compacted, strict=True):
                mine = self._messages[position]
                if _identity(mine) != _identity(given):
                    raise ContextError(
                        f"message {position} of this memory ({mine.get('role')}) is not the "
                        f"compacted message given ({given.get('role')}): the list comes from "
                        "another memory or an older state"
                    )
        for position in chosen:
            self._compressed[position] = True
        self._persist(chosen)
        return chosen

    def update_summary(self, summary: str) -> None:
        self.summary = summary

    def clear(self) -> None:
        """Persist every message not yet persisted, then forget the messages and the summary."""
        self._persist([i for i, done in enumerate(self._persisted) if not done])
        self._messages.clear()
        self._compressed.clear()
        self._persisted.clear()
        self.summary = ""

    # -- state -----------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to restore this memory, as JSON-serialisable data."""
        state = MemoryState(
            session_id=self.session_id,
            summary=self.summary,
            messages=[dict(m) for m in self._messages],
            compressed=list(self._compressed),
            persisted=list(self._persisted),
        )
        return state.model_dump(mode="json")

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Replace this memory's content with a ``state_dict`` (checked before anything changes)."""
        try:
            parsed = MemoryState.model_validate(dict(state))
        except ValidationError as exc:
            problem = exc.errors()[0]
            where = ".".join(str(p) for p in problem["loc"]) or "state"
            raise ContextError(f"invalid memory state: {where}: {problem['msg']}") from None
        messages = validate_messages(parsed.messages)
        self.session_id = parsed.session_id
        self.summary = parsed.summary
        self._messages = messages
        self._compressed = list(parsed.compressed)
        self._persisted = list(parsed.persisted)

    # -- persistence -----------------------------------------------------------------------------

    def dialog_path(self, when: dt.datetime | None = None) -> str:
        now = when or dt.datetime.now(self.tz)
        return f"{DIALOG_DIR}/{now.date().isoformat()}.jsonl"

    def _persist(self, positions: Sequence[int]) -> None:
        todo = [p for p in positions if not self._persisted[p]]
        if not todo or self.files is None:
            return
        now = dt.datetime.now(self.tz).replace(microsecond=0)
        lines = [
            json.dumps(
                {
                    "session_id": self.session_id,
                    "saved_at": now.isoformat(),
                    "message": redact_data(self._messages[p])[0],
                },
                ensure_ascii=False,
                default=str,
            )
            for p in todo
        ]
        self.files.append_lines(self.dialog_path(now), lines)
        for p in todo:
            self._persisted[p] = True


def _identity(message: Mapping[str, Any]) -> tuple[Any, ...]:
    """What identifies a message through compaction (content may have been cut)."""
    return (message.get("role"), message.get("tool_call_id"), tuple(call_ids(message)))
