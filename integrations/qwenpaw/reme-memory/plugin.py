"""reme as QwenPaw's memory backend: a QwenPaw plugin (``plugin.json`` beside this file) that
registers the memory backend ``reme``, which an agent selects with
``running.memory_manager_backend: "reme"`` in its ``agent.json``.

The backend talks to a running ``reme serve`` over HTTP, so nothing of reme is installed in
QwenPaw's environment (QwenPaw ships ``httpx``). Its settings are the agent's
``running.memory_backend_configs.reme``:

- ``url``: reme serve's address (else ``$REME_URL``); required;
- ``token``: a read/write token (else ``$REME_TOKEN``; keep the token in the environment, never
  the admin token in a config file); required;
- ``workspace``: the workspace a multi-workspace server should use (``X-Reme-Workspace``);
- ``capture_every``: record the conversation after every N user turns (default 1; 0 = never);
- ``auto_recall``: search reme with each user message before the model answers (default false;
  the agent always has the ``memory_search`` tool);
- ``max_results`` (default 5); ``timeout`` (seconds a capture may take, default 30: captures run
  in QwenPaw's background worker, never in the reply) and ``search_timeout`` (seconds a search
  may take, default 10: the tool and auto-recall run in the reply, so a server that accepts and
  never answers holds it no longer than this).

Recall is QwenPaw's ``memory_search`` tool answering with ``POST /api/v1/search``; capture is
QwenPaw's own auto-memory worker handing each batch of turns to ``POST /api/v1/auto_memory``
(the transcript under ``sessions/qwenpaw-<chat session>.jsonl``, a note under ``daily/``). A failed
call never fails the agent: the tool answers with the error line, capture logs one warning and
keeps the turns reme did not take in ``<agent folder>/reme-spool/``, sent first by the next
capture.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from pathlib import Path
from typing import Any

import httpx
from agentscope.message import Msg, TextBlock, ToolResultState
from agentscope.tool import ToolChunk
from qwenpaw.agents.memory.base_memory_manager import (
    AutoMemorySearchOptions,
    BaseMemoryManager,
)

logger = logging.getLogger("reme.qwenpaw")

BACKEND_ID = "reme"
SESSION_PREFIX = "qwenpaw-"
SPOOL_DIR = "reme-spool"
SETTINGS = {
    "url",
    "token",
    "workspace",
    "capture_every",
    "auto_recall",
    "max_results",
    "timeout",
    "search_timeout",
}
PROMPT = (
    "You have a long-term memory (reme): call `memory_search` before answering questions about "
    "earlier work, decisions, people, preferences or facts you may have been told, and cite the "
    "paths it returns."
)


def _chunk(text: str, *, ok: bool = True) -> ToolChunk:
    return ToolChunk(
        is_last=True,
        state=ToolResultState.SUCCESS if ok else ToolResultState.ERROR,
        content=[TextBlock(type="text", text=text)],
    )


def settings_of(config: Any) -> dict[str, Any]:
    """The backend's settings, checked: unknown keys and wrong types are a clear error."""
    config = dict(config or {})
    unknown = sorted(set(config) - SETTINGS)
    if unknown:
        raise ValueError(
            f"reme memory backend: unknown setting(s) {unknown}; known: {sorted(SETTINGS)}"
        )
    url = str(config.get("url") or os.environ.get("REME_URL", "")).strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise ValueError(
            f"reme memory backend: url must be reme serve's http(s) address, got {url!r}"
        )
    token = str(config.get("token") or os.environ.get("REME_TOKEN", "")).strip()
    if not token:
        raise ValueError("reme memory backend: no token (set $REME_TOKEN or the 'token' setting)")
    out = {"url": url, "token": token, "workspace": str(config.get("workspace") or "")}
    for key, default in (("capture_every", 1), ("max_results", 5)):
        value = config.get(key, default)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(
                f"reme memory backend: {key} must be a whole number >= 0, got {value!r}"
            )
        out[key] = value
    for key, default in (("timeout", 30), ("search_timeout", 10)):
        value = config.get(key, default)
        if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"reme memory backend: {key} must be seconds > 0, got {value!r}")
        out[key] = float(value)
    if not isinstance(config.get("auto_recall", False), bool):
        raise ValueError("reme memory backend: auto_recall must be true or false")
    out["auto_recall"] = bool(config.get("auto_recall", False))
    return out


def format_hits(body: Any) -> str:
    """reme's ``SearchResponse`` as text with each hit's path and lines."""
    hits = body.get("hits") if isinstance(body, dict) else None
    if not hits:
        return "No relevant memories found."
    parts = []
    for hit in hits:
        where = f"{hit.get('path')}#L{hit.get('start_line')}-L{hit.get('end_line')}"
        parts.append(f"[{where}] (score {float(hit.get('score') or 0):.2f})\n{hit.get('text', '')}")
    return "\n\n".join(parts)


def _bootstrap_guidance() -> tuple[str, ...]:
    """The first-run guidance QwenPaw's bootstrap hook puts in front of an agent's first user
    message while its workspace holds BOOTSTRAP.md (``qwenpaw app``'s chat path): QwenPaw's
    words, not the user's, so capture leaves them out."""
    try:
        from qwenpaw.agents.prompt import build_bootstrap_guidance
    except ImportError:  # a QwenPaw without the hook
        return ()
    return tuple({build_bootstrap_guidance(lang).strip() for lang in ("zh", "en")})


def _without_guidance(text: str, guidance: tuple[str, ...]) -> str:
    for block in guidance:
        if block and text.startswith(block):
            return text[len(block) :].strip()
    return text


def transcript(messages: list[Msg]) -> list[dict[str, str]]:
    """QwenPaw's messages as reme's turns: text only, tool results as assistant lines, QwenPaw's
    own injected recall and first-run guidance left out."""
    guidance = _bootstrap_guidance()
    turns: list[dict[str, str]] = []
    for msg in messages:
        clean = BaseMemoryManager.message_without_auto_memory_search(msg)
        if clean is None or clean.role not in {"user", "assistant"}:
            continue
        texts: list[str] = []
        for block in clean.content if isinstance(clean.content, list) else []:
            kind = getattr(block, "type", "")
            if kind == "text":
                texts.append(str(block.text))
            elif kind == "tool_result":
                output = block.output if isinstance(block.output, list) else [block.output]
                result = "\n".join(str(getattr(o, "text", o)) for o in output)
                texts.append(f"[{block.name} answered] {result}")
        if isinstance(clean.content, str):
            texts.append(clean.content)
        text = "\n".join(t for t in texts if t.strip()).strip()
        if clean.role == "user":
            text = _without_guidance(text, guidance)
        if text:
            turn = {"role": clean.role, "content": text}
            if isinstance(getattr(msg, "id", None), str) and msg.id:
                turn["id"] = msg.id  # so a message said twice is two turns, resent it is one
            turns.append(turn)
    return turns


class RemeMemoryManager(BaseMemoryManager):
    """QwenPaw's memory over a running ``reme serve``."""

    def __init__(
        self, working_dir: str | None = None, agent_id: str | None = None, *, context: Any = None
    ):
        super().__init__(working_dir, agent_id, context=context)
        self.settings = settings_of(context.backend_config if context is not None else {})
        self._http: httpx.AsyncClient | None = None

    async def start(self) -> None:
        headers = {"Authorization": f"Bearer {self.settings['token']}"}
        if self.settings["workspace"]:
            headers["X-Reme-Workspace"] = self.settings["workspace"]
        self._http = httpx.AsyncClient(
            base_url=self.settings["url"], headers=headers, timeout=self.settings["timeout"]
        )

    async def _close_backend(self) -> bool:
        if self._http is not None:
            await self._http.aclose()
            self._http = None
        return True

    async def _call(self, operation: str, payload: dict[str, Any], timeout: float) -> Any:
        if self._http is None:
            raise RuntimeError("reme memory backend is not started")
        where = self.settings["url"]
        try:
            response = await self._http.post(
                f"/api/v1/{operation}", json=payload, timeout=httpx.Timeout(timeout)
            )
        except httpx.TimeoutException:
            raise RuntimeError(
                f"reme at {where} did not answer {operation} within {timeout:g} s"
            ) from None
        except httpx.HTTPError as exc:
            raise RuntimeError(f"cannot reach reme at {where}: {exc}") from None
        try:
            body = response.json()
        except ValueError:
            body = None
        if response.is_success:
            return body
        error = body.get("error") if isinstance(body, dict) else None
        message = error.get("message") if isinstance(error, dict) else response.text[:200]
        raise RuntimeError(f"reme {operation} answered HTTP {response.status_code}: {message}")

    def get_memory_prompt(self) -> str:
        return PROMPT

    async def memory_search(self, query: str, max_results: int = 5, **kwargs: Any) -> ToolChunk:
        """Search the long-term memory (reme) for notes and past sessions about ``query``.

        Args:
            query (`str`): What to look for, in a few words.
            max_results (`int`, optional): How many snippets to return. Defaults to 5.

        Returns:
            Snippets with their paths and line numbers.
        """
        del kwargs
        query = str(query or "").strip()
        if not query:
            return _chunk("Error: query cannot be empty", ok=False)
        limit = max(1, int(max_results or self.settings["max_results"]))
        try:
            body = await self._call(
                "search",
                {"query": query, "limit": limit, "min_score": 0},
                self.settings["search_timeout"],
            )
        except RuntimeError as exc:
            return _chunk(f"Error: memory search failed: {exc}", ok=False)
        return _chunk(format_hits(body))

    async def get_auto_memory_search_options(self) -> AutoMemorySearchOptions | None:
        if not self.settings["auto_recall"]:
            return None
        return AutoMemorySearchOptions(max_results=min(3, self.settings["max_results"] or 3))

    def get_auto_memory_interval(self) -> int:
        return self.settings["capture_every"]

    def build_middlewares(self) -> list[Any]:
        """QwenPaw's memory middleware, naming each capture by the chat session the request
        belongs to: the ``session_id`` it passes otherwise is its agent's, new each request, so
        one chat would become one transcript per turn."""
        from qwenpaw.agents.middlewares import MemoryMiddleware

        class ChatSessionMemoryMiddleware(MemoryMiddleware):
            @staticmethod
            def _agent_session_id(agent: Any) -> str:
                request = getattr(agent, "_request_context", None) or {}
                chat = request.get("session_id") if isinstance(request, dict) else None
                return str(chat or MemoryMiddleware._agent_session_id(agent))

        return [ChatSessionMemoryMiddleware(memory_manager=self)]

    def _spool(self) -> Path:
        return Path(self.working_dir) / SPOOL_DIR

    def _waiting(self) -> list[dict[str, Any]]:
        """The captures reme did not take yet, oldest first (a file that cannot be read is
        left where it is and named once in the log)."""
        folder = self._spool()
        out: list[dict[str, Any]] = []
        for path in sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime):
            try:
                pending = json.loads(path.read_text(encoding="utf-8"))
                if isinstance(pending.get("session_id"), str) and pending.get("messages"):
                    out.append(pending)
                    continue
            except (OSError, ValueError, AttributeError):
                pass
            logger.warning(
                "reme capture: %s is not a capture this plugin kept; left as it is", path
            )
        return out

    def _keep(self, payload: dict[str, Any]) -> None:
        folder = self._spool()
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"{payload['session_id']}.json"
        temp = target.with_suffix(f".{os.getpid()}.tmp")
        temp.write_text(json.dumps(payload), encoding="utf-8")
        temp.replace(target)  # atomic: a half-written file is never read back

    def _forget(self, session_id: str) -> None:
        (self._spool() / f"{session_id}.json").unlink(missing_ok=True)

    async def auto_memory(self, messages: list[Msg], **kwargs: Any) -> str:
        """Hand one batch of turns to reme's auto_memory, after any batch an earlier capture
        could not hand over. A failure is one warning line, and the turns not taken wait in
        ``<agent folder>/reme-spool/`` for the next capture (reme adds a turn it has once)."""
        session = f"{SESSION_PREFIX}{kwargs.get('session_id') or 'default'}"
        waiting = self._waiting()
        own = [t for p in waiting if p["session_id"] == session for t in p["messages"]]
        calls = [p for p in waiting if p["session_id"] != session]
        turns = own + [t for t in transcript(messages) if t not in own]
        if turns:
            calls.append({"session_id": session, "messages": turns})
        recorded: list[str] = []
        for n, payload in enumerate(calls):
            try:
                body = await self._call("auto_memory", payload, self.settings["timeout"])
            except asyncio.CancelledError:  # QwenPaw stopping its worker mid-call: keep the turns
                for later in calls[n:]:
                    self._keep(later)
                raise
            except RuntimeError as exc:
                for later in calls[n:]:
                    self._keep(later)
                kept = sum(len(p["messages"]) for p in calls[n:])
                logger.warning(
                    "reme capture skipped: %s; %d turn(s) kept in %s for the next capture",
                    exc,
                    kept,
                    self._spool(),
                )
                break
            self._forget(payload["session_id"])
            outputs = body.get("outputs", body) if isinstance(body, dict) else {}
            recorded.append(
                f"{payload['session_id']}: {len(payload['messages'])} turn(s) {outputs}"
            )
        return f"reme recorded {'; '.join(recorded)}" if recorded else ""


class RemePlugin:
    """What QwenPaw's plugin loader calls (``plugin.register(api)``)."""

    def register(self, api: Any) -> None:
        api.register_memory_backend(
            backend_id=BACKEND_ID, factory=RemeMemoryManager, label="reme (reme serve over HTTP)"
        )


plugin = RemePlugin()
