"""Compacted turns persisted in the background through the ``auto_memory`` pipeline.

The agent must not wait for a note to be written before its next model call, so each batch of
compacted messages goes to a single worker thread, in order. auto_memory saves the transcript
(``sessions/<session_id>.jsonl``) before any model call and writes or updates the session's
daily note, so the turns become searchable; if its model fails, the transcript is saved and the
turns stay pending for the next run. ``wait`` (``await_summary_tasks``) reports every batch.
"""

from __future__ import annotations

import datetime as dt
import logging
import secrets
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from reme_core.light.messages import content_text, message_text

if TYPE_CHECKING:
    from reme_core.runtime import Reme

log = logging.getLogger(__name__)


class PersistOutcome(BaseModel):
    """What became of one batch of compacted messages."""

    session_id: str
    messages: int
    status: Literal["saved", "failed"]
    notes: list[str] = Field(default_factory=list)
    """Daily notes written or updated."""
    transcript: str | None = None
    error: str | None = None
    """Why the run failed; the transcript may still be saved, with its turns pending."""


def new_session_id(now: dt.datetime | None = None) -> str:
    """A session id that auto_memory accepts as a file name: ``agent-YYYYmmdd-HHMMSS-xxxx``."""
    stamp = (now or dt.datetime.now()).strftime("%Y%m%d-%H%M%S")
    return f"agent-{stamp}-{secrets.token_hex(2)}"


def to_transcript(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Messages as auto_memory takes them: tool calls and results written into the text."""
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role == "tool":
            text = f"[tool result {message.get('tool_call_id', '')}]\n"
            text += content_text(message.get("content"))
        else:
            text = message_text(message)
        if not text.strip():
            continue
        turn: dict[str, Any] = {"role": role, "content": text}
        for key in ("id", "timestamp"):
            if isinstance(message.get(key), str | int) and not isinstance(message[key], bool):
                turn[key] = message[key]
        out.append(turn)
    return out


class Persister:
    """One worker thread running ``pipeline`` for each submitted batch, in submission order."""

    def __init__(self, reme: Reme, session_id: str, pipeline: str = "auto_memory"):
        self.reme = reme
        self.session_id = session_id
        self.pipeline = pipeline
        self._executor: ThreadPoolExecutor | None = None
        self._futures: list[Future[PersistOutcome]] = []
        self._lock = threading.Lock()

    def submit(
        self, messages: Sequence[Mapping[str, Any]], date: str | None = None
    ) -> Future[PersistOutcome]:
        transcript = to_transcript(messages)
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix=f"reme-persist-{self.session_id}"
                )
            future = self._executor.submit(self._run, transcript, date)
            self._futures.append(future)
        return future

    def pending(self) -> int:
        with self._lock:
            return sum(1 for f in self._futures if not f.done())

    def wait(self, timeout: float | None = None) -> list[PersistOutcome]:
        """Wait for every batch submitted so far; return their outcomes and forget them."""
        with self._lock:
            futures, self._futures = self._futures, []
        return [future.result(timeout=timeout) for future in futures]

    def close(self) -> None:
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)

    def _run(self, transcript: list[dict[str, Any]], date: str | None) -> PersistOutcome:
        params: dict[str, Any] = {"session_id": self.session_id, "messages": transcript}
        if date is not None:
            params["date"] = date
        try:
            result = self.reme.run(self.pipeline, params)
        except Exception as exc:  # a background thread reports, never raises into nothing
            log.warning("persisting %d compacted messages failed: %s", len(transcript), exc)
            return PersistOutcome(
                session_id=self.session_id,
                messages=len(transcript),
                status="failed",
                error=f"{type(exc).__name__}: {exc}",
            )
        outputs = result.outputs
        notes = list(
            dict.fromkeys(str(n["path"]) for n in outputs.get("notes", []) if n.get("path"))
        )
        return PersistOutcome(
            session_id=self.session_id,
            messages=len(transcript),
            status="saved",
            notes=notes,
            transcript=outputs.get("transcript"),
        )
