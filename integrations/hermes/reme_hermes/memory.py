"""What the provider does, without Hermes: recall, the tools, capture, and their failures.

``provider.py`` wraps this in Hermes' ``MemoryProvider``; keeping the logic here lets it be
tested without Hermes installed. Nothing here raises into Hermes: a failure becomes one line in
the log (the same cause is not repeated until something succeeds), an empty recall, or a tool
result that says what went wrong, and the reply goes on.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from reme_hermes.backends import Backend, EmbeddedBackend, HttpBackend, RemeUnavailable
from reme_hermes.log import EventLog
from reme_hermes.settings import HermesSettings, http_target
from reme_hermes.spool import Pending, Spool
from reme_hermes.turns import reme_session_id, turns_from

SEARCH_TOOL = "reme_search"
READ_TOOL = "reme_read"
TOOL_HIT_CHARS = 2000
SYSTEM_BLOCK = (
    "Long-term memory: reme, a folder of Markdown notes. Notes relevant to the user's message "
    f"are recalled into a <memory-context> block before you answer. Call {SEARCH_TOOL} to look "
    f"for more (a few distinctive words work best), {READ_TOOL} to open a note or a line range "
    "of it; cite the note paths you use, and say so when memory holds nothing on the question."
)
TOOL_SCHEMAS: list[dict[str, Any]] = [
    {
        "name": SEARCH_TOOL,
        "description": (
            "Search long-term memory (the user's notes, earlier sessions, daily notes). "
            "Returns the best-matching passages with their note path and lines."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5},
            },
            "required": ["query"],
        },
    },
    {
        "name": READ_TOOL,
        "description": "Read a memory note (a path a search returned), or a line range of it.",
        "parameters": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "e.g. notes/deploy.md"},
                "start_line": {"type": "integer", "minimum": 1, "default": 1},
                "end_line": {"type": "integer", "minimum": 1},
            },
            "required": ["path"],
        },
    },
]


def make_backend(settings: HermesSettings) -> Backend:
    if settings.mode == "embedded":
        assert settings.workspace is not None  # checked by RemeMemory.problem()
        return EmbeddedBackend(settings.workspace, settings.pipeline)
    url, token, workspace = http_target(settings)
    return HttpBackend(url, token, workspace, settings.timeout_s)


class RemeMemory:
    def __init__(
        self,
        settings: HermesSettings,
        hermes_home: Path,
        backend: Callable[[HermesSettings], Backend] = make_backend,
    ):
        self.settings = settings
        self.log = EventLog(hermes_home)
        self.spool = Spool(hermes_home / "reme" / "pending")
        self._backend_factory = backend
        self._backend: Backend | None = None
        self._capture_lock = threading.Lock()
        self._told: set[str] = set()
        """Failures already logged since the last success: each is said once."""
        self.session_id = ""
        self.primary = True

    def problem(self) -> str | None:
        """Why the provider cannot start (checked without any network call), else None."""
        if self.settings.mode == "embedded":
            if self.settings.workspace is None:
                return "embedded mode needs a workspace (REME_WORKSPACE or reme.json)"
            return None
        _, token, _ = http_target(self.settings)
        if not token:
            return "http mode needs a token: set REME_TOKEN (`reme token create --profile write`)"
        return None

    @property
    def backend(self) -> Backend:
        if self._backend is None:
            self._backend = self._backend_factory(self.settings)
        return self._backend

    # -- log -------------------------------------------------------------------------------

    def _ok(self, message: str | None = None) -> None:
        self._told.clear()
        if message:
            self.log.line(message)

    def _problem(self, message: str, key: str) -> None:
        """Log ``message`` unless ``key`` (the cause; for a capture, the session too) was
        already told: a server that is down is one line, not one per turn and tool call."""
        if key not in self._told:
            self._told.add(key)
            self.log.line(message, problem=True)

    # -- recall ----------------------------------------------------------------------------

    def recall(self, query: str) -> str:
        """The recalled block for the next reply ("" when nothing matched or reme failed)."""
        if self.settings.recall_limit == 0 or not query.strip():
            return ""
        try:
            hits = self.backend.search(query, self.settings.recall_limit)
        except RemeUnavailable as exc:
            self._problem(f"recall skipped: {exc}", str(exc))
            return ""
        self._told.clear()
        if not hits:
            return ""
        blocks = []
        limit = self.settings.recall_chars
        for hit in hits:
            text = " ".join(str(hit["text"]).split())
            text = text if len(text) <= limit else text[: limit - 3] + "..."
            blocks.append(f"[{hit['path']}#L{hit['start_line']}-L{hit['end_line']}] {text}")
        return "From reme (the user's notes; cite the path):\n" + "\n".join(blocks)

    def tool(self, name: str, args: Mapping[str, Any]) -> str:
        """A tool call's JSON result; a failure is a result that says what went wrong."""
        try:
            if name == SEARCH_TOOL:
                query = str(args.get("query") or "").strip()
                if not query:
                    return json.dumps({"error": "reme_search needs a non-empty query"})
                limit = max(1, min(int(args.get("limit") or 5), 20))
                hits = self.backend.search(query, limit)
                for hit in hits:
                    hit["text"] = str(hit["text"])[:TOOL_HIT_CHARS]
                self._told.clear()
                return json.dumps({"query": query, "hits": hits}, ensure_ascii=False)
            if name == READ_TOOL:
                path = str(args.get("path") or "").strip()
                if not path:
                    return json.dumps({"error": "reme_read needs a path"})
                end = args.get("end_line")
                found = self.backend.read(
                    path, int(args.get("start_line") or 1), int(end) if end else None
                )
                return json.dumps(found, ensure_ascii=False, default=str)
        except RemeUnavailable as exc:
            self._problem(f"{name} failed: {exc}", str(exc))
            return json.dumps({"error": str(exc)})
        except (TypeError, ValueError) as exc:
            return json.dumps({"error": f"bad arguments for {name}: {exc}"})
        return json.dumps({"error": f"unknown tool {name}"})

    # -- capture ---------------------------------------------------------------------------

    def capture(
        self, session_id: str, messages: Iterable[Mapping[str, Any]], flush: bool = False
    ) -> None:
        """Save the session's turns (all of them: reme keeps only the new ones), after anything
        an earlier failure left waiting."""
        if not self.settings.capture or not self.primary:
            return
        turns = turns_from(messages)
        session = reme_session_id(session_id or self.session_id or "session")
        with self._capture_lock:
            if turns:
                self.spool.put(Pending(session_id=session, turns=turns, flush=flush))
            for pending in self.spool.waiting():
                if not self._send(pending):
                    break  # reme is down or refuses: the rest waits for the next capture too

    def _send(self, pending: Pending) -> bool:
        try:
            outputs = self.backend.capture(pending.session_id, pending.turns, pending.flush)
        except RemeUnavailable as exc:
            self._problem(
                f"{pending.session_id}: not saved, {exc}; its {len(pending.turns)} turn(s) "
                f"are kept in {self.spool.folder} and sent again at the next capture",
                f"{pending.session_id}: {exc}",
            )
            return False
        self.spool.drop(pending.session_id)
        status, note = outputs.get("status") or "saved", outputs.get("note")
        if status == "unchanged" and not outputs.get("added"):
            self._told.clear()
            return True  # a resend of turns already saved: nothing to tell
        line = f"{pending.session_id}: {status}" + (f" {note}" if note else "")
        added = outputs.get("added")
        if isinstance(added, int):
            line += f" ({added} new turn(s))"
        self._ok(line)
        return True

    def close(self) -> None:
        if self._backend is not None:
            try:
                self._backend.close()
            except Exception as exc:
                self.log.line(f"closing reme failed: {exc}", problem=True)
            self._backend = None
