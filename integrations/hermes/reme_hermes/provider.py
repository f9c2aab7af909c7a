"""reme as a Hermes Agent memory provider (``agent.memory_provider.MemoryProvider``).

Hermes calls, per its ``MemoryManager``: ``system_prompt_block`` once; ``prefetch(query)`` before
each reply (in a thread it gives 8 s); ``get_tool_schemas`` / ``handle_tool_call`` for
``reme_search`` and ``reme_read``; ``sync_turn`` after each reply, on its own background worker,
with the session's messages so far; ``on_session_end`` at exit (``hermes -z`` included), where
the session is captured once more with ``flush`` so reme summarises whatever it was still
batching; ``shutdown`` last. Only a primary agent captures: a subagent's, a cron job's or a
flush agent's turns are not the user's conversation.

Importable only inside Hermes (it subclasses Hermes' own ABC); the logic lives in ``memory.py``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from agent.memory_provider import MemoryProvider

from reme_hermes.memory import SYSTEM_BLOCK, TOOL_SCHEMAS, RemeMemory
from reme_hermes.settings import (
    DEFAULT_URL,
    HermesSettings,
    SettingsError,
    load_settings,
    write_settings,
)

NAME = "reme"


def _hermes_home(given: Any = None) -> Path:
    if given:
        return Path(str(given))
    try:
        from hermes_constants import get_hermes_home

        return Path(get_hermes_home())
    except Exception:
        return Path(os.environ.get("HERMES_HOME") or Path.home() / ".hermes")


class RemeMemoryProvider(MemoryProvider):
    def __init__(self) -> None:
        self._memory: RemeMemory | None = None
        self._messages: list[dict[str, Any]] = []
        """The turns seen through sync_turn, for a Hermes that does not pass ``messages``."""

    @property
    def name(self) -> str:
        return NAME

    def _load(self, hermes_home: Any = None) -> RemeMemory | None:
        home = _hermes_home(hermes_home)
        if self._memory is None:
            try:
                self._memory = RemeMemory(load_settings(home), home)
            except SettingsError as exc:
                from reme_hermes.log import EventLog

                EventLog(home).line(f"reme memory is off: {exc}", problem=True)
                return None
        return self._memory

    def is_available(self) -> bool:
        memory = self._load()
        if memory is None:
            return False
        problem = memory.problem()
        if problem:
            memory.log.line(f"reme memory is off: {problem}", problem=True)
            return False
        return True

    def initialize(self, session_id: str, **kwargs: Any) -> None:
        self._memory = None  # hermes_home may name another profile than is_available() saw
        memory = self._load(kwargs.get("hermes_home"))
        if memory is None:
            return
        memory.session_id = session_id
        memory.primary = kwargs.get("agent_context", "primary") == "primary"
        self._messages = []

    def system_prompt_block(self) -> str:
        return SYSTEM_BLOCK if self._memory is not None else ""

    def prefetch(self, query: str, *, session_id: str = "") -> str:
        return self._memory.recall(query) if self._memory is not None else ""

    def get_tool_schemas(self) -> list[dict[str, Any]]:
        return [dict(schema) for schema in TOOL_SCHEMAS] if self._memory is not None else []

    def handle_tool_call(self, tool_name: str, args: dict[str, Any], **kwargs: Any) -> str:
        if self._memory is None:
            return '{"error": "reme memory is not configured"}'
        return self._memory.tool(tool_name, args or {})

    def sync_turn(
        self,
        user_content: str,
        assistant_content: str,
        *,
        session_id: str = "",
        messages: list[dict[str, Any]] | None = None,
    ) -> None:
        if self._memory is None:
            return
        if messages is None:
            self._messages += [
                {"role": "user", "content": user_content},
                {"role": "assistant", "content": assistant_content},
            ]
            messages = self._messages
        self._memory.capture(session_id, messages)

    def on_session_end(self, messages: list[dict[str, Any]]) -> None:
        if self._memory is not None:
            self._memory.capture("", messages or self._messages, flush=True)

    def on_session_switch(self, new_session_id: str, **kwargs: Any) -> None:
        if self._memory is not None and new_session_id:
            self._memory.session_id = new_session_id
            if kwargs.get("reset"):
                self._messages = []

    def shutdown(self) -> None:
        if self._memory is not None:
            self._memory.close()

    # -- `hermes memory setup` -------------------------------------------------------------

    def get_config_schema(self) -> list[dict[str, Any]]:
        return [
            {
                "key": "mode",
                "description": "http: a running `reme serve`; embedded: reme in this process",
                "default": "http",
                "choices": ["http", "embedded"],
            },
            {"key": "url", "description": "reme server (http mode)", "default": DEFAULT_URL},
            {
                "key": "token",
                "description": "reme token with the write profile (http mode)",
                "secret": True,
                "env_var": "REME_TOKEN",
            },
            {"key": "workspace", "description": "workspace folder (embedded mode: required)"},
        ]

    def save_config(self, values: dict[str, Any], hermes_home: str) -> None:
        write_settings(Path(hermes_home), values)

    def backup_paths(self) -> list[str]:
        try:
            settings: HermesSettings = load_settings(_hermes_home())
        except SettingsError:
            return []
        if settings.mode == "embedded" and settings.workspace is not None:
            return [str(settings.workspace)]
        return []


__all__ = ["NAME", "RemeMemoryProvider"]
