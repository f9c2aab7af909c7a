"""The auto_memory steps: a session transcript becomes one note per day under ``daily/<date>/``.

``auto_memory`` params: ``session_id``, ``messages`` (list of ``{role, content, timestamp?,
id?}``), optional ``date`` (YYYY-MM-DD), ``hint`` and ``flush`` (true: summarise the pending
turns now, however few). Adds ``note``, ``notes``, ``status`` (written, updated, unsummarised,
trivial, deferred or unchanged), ``turns``, ``added``, ``changed`` (the notes written, for steps
such as auto_tag), ``transcript``, ``redacted``, ``warnings``, ``deferred`` and ``pending`` (the
turns a deferred call left waiting for ``min_pending_turns``).

``flush: idle`` with no ``session_id`` sweeps instead: every session this pipeline left with
pending turns older than ``flush_after_minutes`` (at ``now``, an optional ISO time, default the
current time) is flushed. Adds ``flushed`` (each session's result), ``failed`` (``{session_id,
error}``: those turns stay pending), ``waiting`` (session ids not idle long enough) and
``changed``.

``claude_code_transcript`` (pipeline ``auto_memory_cc``, before ``auto_memory``) reads a Claude
Code session by id and puts its new turns into ``messages``; ``codex_transcript`` (pipeline
``auto_memory_codex``) does the same for a Codex session (its rollout file, by thread id).
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Callable, Set
from pathlib import Path
from typing import Any, ClassVar

from reme_core.api import ConfigError, Prompts, RemeError, Step, hookimpl, named_lock
from reme_plugins.auto_memory.claude_code import ClaudeCodeTranscriptStep
from reme_plugins.auto_memory.codex import CodexTranscriptStep
from reme_plugins.auto_memory.cursor import forget_notes, pending_sessions
from reme_plugins.auto_memory.request import (
    FLUSH_IDLE,
    AutoMemoryRequest,
    AutoMemorySettings,
    flush_param,
    now_param,
)
from reme_plugins.auto_memory.transcript import SESSION_ID, AutoMemoryError
from reme_plugins.auto_memory.writer import SessionWriter


class AutoMemoryStep(Step):
    name: ClassVar[str] = "auto_memory"
    Settings = AutoMemorySettings
    settings: AutoMemorySettings

    @classmethod
    def forget_paths(cls, state_dir: Path, paths: Set[str]) -> list[str]:
        """Purged notes leave the session cursors' ``unsummarised`` (``cursor.forget_notes``)."""
        return [p.relative_to(state_dir).as_posix() for p in forget_notes(state_dir, paths)]

    def run(self, run: Any, state: dict[str, Any]) -> dict[str, Any]:
        reme = run.reme
        if self.settings.mode == "agentic" and reme.agent_wrapper is None:
            raise ConfigError(
                "auto_memory mode agentic needs components.agent_wrapper (e.g. toolloop)"
            )
        prompts = run.prompts("reme_plugins", "auto_memory")
        if flush_param(state.get("flush")) == FLUSH_IDLE:
            return self._flush_idle(run, state, prompts)
        request = AutoMemoryRequest.from_state(state, reme.settings.tzinfo())
        return self._process(run, request, prompts)

    def _process(self, run: Any, request: AutoMemoryRequest, prompts: Prompts) -> dict[str, Any]:
        # One run per session at a time, across threads and processes: two calls with the same
        # turns must not both create a note.
        lock = f"auto_memory:{request.session_id}"
        with named_lock(run.reme.state_dir, lock, timeout=self.settings.lock_timeout):
            writer = SessionWriter(run, request, self.settings, prompts)
            return writer.process()

    def _flush_idle(self, run: Any, state: dict[str, Any], prompts: Prompts) -> dict[str, Any]:
        """Flush every session of this pipeline whose oldest pending turn is old enough."""
        if state.get("session_id") not in (None, ""):
            raise AutoMemoryError(
                "flush: idle sweeps every idle session and takes no session_id; "
                "use flush: true to flush one session"
            )
        reme = run.reme
        now = now_param(state.get("now"), reme.settings.tzinfo()) or dt.datetime.now(dt.UTC)
        due = now - dt.timedelta(minutes=self.settings.flush_after_minutes)
        flushed: list[dict[str, Any]] = []
        failed: list[dict[str, str]] = []
        waiting: list[str] = []
        changed: list[str] = []
        for session_id, cursor in pending_sessions(reme.state_dir):
            owner = cursor.pipeline
            if owner not in (None, run.name) and owner in reme.settings.pipelines:
                continue  # its own pipeline (another model, another step) flushes it
            if not SESSION_ID.fullmatch(session_id):
                continue  # not a cursor auto_memory wrote
            assert cursor.pending_since is not None
            if cursor.pending_since > due:
                waiting.append(session_id)
                continue
            request = AutoMemoryRequest(session_id, [], None, None, Counter(), flush=True, now=now)
            try:
                out = self._process(run, request, prompts)
            except ConfigError:
                raise  # no model, a bad setting: every session would fail the same way
            except RemeError as exc:  # a failed call: its turns stay pending for the next sweep
                failed.append({"session_id": session_id, "error": str(exc)})
                continue
            flushed.append(out)
            changed += [path for path in out["changed"] if path not in changed]
        return {"flushed": flushed, "failed": failed, "waiting": waiting, "changed": changed}


@hookimpl
def register_steps(register: Callable[[type[Step]], None]) -> None:
    """Register ``auto_memory``, ``claude_code_transcript`` and ``codex_transcript``."""
    register(AutoMemoryStep)
    register(ClaudeCodeTranscriptStep)
    register(CodexTranscriptStep)


@hookimpl
def register_commands(register: Callable[..., None]) -> None:
    """Register ``reme codex capture``."""
    from reme_plugins.auto_memory.codex_cli import capture_command  # click only when the CLI runs

    register(capture_command, group="codex")
