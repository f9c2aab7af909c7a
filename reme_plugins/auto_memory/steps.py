"""The auto_memory steps: a session transcript becomes one note per day under ``daily/<date>/``.

``auto_memory`` params: ``session_id``, ``messages`` (list of ``{role, content, timestamp?,
id?}``), optional ``date`` (YYYY-MM-DD) and ``hint``. Adds ``note``, ``notes``, ``status``
(written, updated, unsummarised, trivial or unchanged), ``turns``, ``added``, ``changed`` (the
notes written, for steps such as auto_tag), ``transcript``, ``redacted`` and ``warnings``.

``claude_code_transcript`` (pipeline ``auto_memory_cc``, before ``auto_memory``) reads a Claude
Code session by id and puts its new turns into ``messages``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from reme_core import hookimpl
from reme_core.components import Step
from reme_core.errors import ConfigError
from reme_core.pipelines.locks import named_lock
from reme_plugins.auto_memory.claude_code import ClaudeCodeTranscriptStep
from reme_plugins.auto_memory.request import AutoMemoryRequest, AutoMemorySettings
from reme_plugins.auto_memory.writer import SessionWriter


class AutoMemoryStep(Step):
    name: ClassVar[str] = "auto_memory"
    Settings = AutoMemorySettings
    settings: AutoMemorySettings

    def run(self, run: Any, state: dict[str, Any]) -> dict[str, Any]:
        reme = run.reme
        request = AutoMemoryRequest.from_state(state, reme.settings.tzinfo())
        if self.settings.mode == "agentic" and reme.agent_wrapper is None:
            raise ConfigError(
                "auto_memory mode agentic needs components.agent_wrapper (e.g. toolloop)"
            )
        prompts = run.prompts("reme_plugins", "auto_memory")
        # One run per session at a time, across threads and processes: two calls with the same
        # turns must not both create a note.
        lock = f"auto_memory:{request.session_id}"
        with named_lock(reme.state_dir, lock, timeout=self.settings.lock_timeout):
            writer = SessionWriter(run, request, self.settings, prompts)
            return writer.process()


@hookimpl
def register_steps(register: Callable[[type[Step]], None]) -> None:
    """Register ``auto_memory`` and ``claude_code_transcript``."""
    register(AutoMemoryStep)
    register(ClaudeCodeTranscriptStep)
