"""``RemeLongTermMemory``: long-term memory for AgentScope agents, stored in reme.

AgentScope 2.x has no long-term memory base class any more (1.x had ``LongTermMemoryBase`` with
``record`` / ``retrieve`` and the tool functions ``record_to_memory`` / ``retrieve_from_memory``);
its long-term memories are middlewares (``agentscope.middleware.MiddlewareBase``: ``Mem0Middleware``,
``ReMeMiddleware``). This class is one, and keeps 1.x's four names:

- ``retrieve_from_memory(keywords, limit)`` and ``record_to_memory(thinking, content)``: the
  tools ``list_tools()`` gives the agent's ``Toolkit``;
- ``retrieve(msg)`` / ``record(msgs)``: the same from code;
- ``on_reply``: after each reply, the turn's new messages are recorded (capture);
- ``on_system_prompt``: tells the model the tools exist.

Recording is reme's ``auto_memory``: the turns are saved to ``sessions/<session_id>.jsonl`` and
the session's note under ``daily/<date>/`` links to it (summarised when reme has a model).
Storage is a workspace in this process (``workspace=``) or a running ``reme serve``
(``url=``, ``token=``; recording needs a write token). A failing store never fails the agent:
the tool answers with the error line, and capture logs one warning and keeps the turns reme did
not take in a spool folder (spool.py), sent first by the next capture of any session. Over HTTP
every call is bounded: a server that accepts the connection and never answers holds a search
for ``timeout`` seconds (default 10) and the capture after a reply for ``capture_timeout``
(default 5), after which the turns go to the spool with one log line. Each turn
carries its message id, so a message said twice is two turns and one sent again is one.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import AsyncGenerator, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from agentscope.message import Msg, TextBlock, ToolResultState
from agentscope.middleware import MiddlewareBase
from agentscope.permission import PermissionBehavior, PermissionDecision
from agentscope.tool import FunctionTool, ToolChunk

from reme_agentscope.messages import flatten, turns, without_hints
from reme_agentscope.spool import LOCK, Spool, default_spool
from reme_agentscope.store import (
    CAPTURE_TIMEOUT_S,
    SEARCH_TIMEOUT_S,
    EmbeddedStore,
    HttpStore,
    Store,
    StoreError,
    check_seconds,
)
from reme_core.api import format_hits

if TYPE_CHECKING:
    from agentscope.agent import Agent
    from agentscope.tool import ToolBase

log = logging.getLogger(__name__)

INSTRUCTIONS = (
    "## Long-term memory (reme)\n\n"
    "Before answering a question about earlier work, decisions, people, preferences or facts "
    "you were told before, call `retrieve_from_memory` with a few keywords and answer from what "
    "it returns (cite its paths). Call `record_to_memory` to keep something for later sessions."
)


class RemeLongTermMemory(MiddlewareBase):
    """AgentScope long-term memory in a reme workspace (embedded) or a ``reme serve`` (HTTP)."""

    def __init__(
        self,
        *,
        workspace: str | Path | None = None,
        url: str | None = None,
        token: str | None = None,
        session_id: str | None = None,
        limit: int = 5,
        min_score: float = 0.0,
        capture: bool = True,
        overrides: tuple[str, ...] = (),
        spool: str | Path | None = None,
        timeout: float = SEARCH_TIMEOUT_S,
        capture_timeout: float = CAPTURE_TIMEOUT_S,
    ):
        if (workspace is None) == (url is None):
            raise ValueError("give exactly one of workspace= (embedded) or url= (reme serve)")
        if not 1 <= int(limit) <= 50:
            raise ValueError(f"limit must be 1 to 50, got {limit}")
        if not 0 <= float(min_score) <= 1:
            raise ValueError(f"min_score must be in [0, 1], got {min_score}")
        check_seconds("timeout", timeout)
        check_seconds("capture_timeout", capture_timeout)
        self.store: Store = (
            EmbeddedStore(workspace, overrides)
            if workspace is not None
            else HttpStore(url, token, timeout=timeout, capture_timeout=capture_timeout)  # type: ignore[arg-type]
        )
        target = str(self.store.workspace) if isinstance(self.store, EmbeddedStore) else url
        self.spool = Spool(spool if spool is not None else default_spool(str(target)))
        self.session_id = session_id
        self.limit = int(limit)
        self.min_score = float(min_score)
        self.capture = capture

    # -- the 1.x long-term memory API ------------------------------------------------------------

    async def record(self, msgs: Msg | list[Msg] | None, session_id: str | None = None) -> dict:
        """Save messages through auto_memory, after the turns kept from captures reme did not
        take; returns the outputs for this session (transcript, notes). When reme cannot take
        them, StoreError, and the turns not taken are kept in the spool for the next call."""
        batch = [] if msgs is None else [msgs] if isinstance(msgs, Msg) else list(msgs)
        new = turns(flatten(without_hints(batch)))
        return await asyncio.to_thread(self._send, self._session(session_id) if new else None, new)

    def _send(self, session: str | None, new: list[dict]) -> dict:
        with LOCK:
            waiting = self.spool.waiting()
            own = [t for p in waiting if p["session_id"] == session for t in p["messages"]]
            calls = [p for p in waiting if p["session_id"] != session]
            if session is not None:
                calls.append(
                    {"session_id": session, "messages": own + [t for t in new if t not in own]}
                )
            outputs: dict = {}
            for n, payload in enumerate(calls):
                try:
                    done = self.store.record(payload["session_id"], payload["messages"])
                except StoreError as exc:
                    if not exc.retry:  # reme will never take these: keeping them would jam
                        self.spool.forget(payload["session_id"])
                        log.warning(
                            "reme capture: %s; %d turn(s) of %s refused as bad input, not kept",
                            exc,
                            len(payload["messages"]),
                            payload["session_id"],
                        )
                        continue
                    for later in calls[n:]:
                        self.spool.keep(later)
                    kept = sum(len(p["messages"]) for p in calls[n:])
                    raise StoreError(
                        f"{exc}; {kept} turn(s) kept in {self.spool.folder} for the next capture"
                    ) from None
                self.spool.forget(payload["session_id"])
                if payload["session_id"] == session:
                    outputs = dict(done)
            return outputs

    async def retrieve(self, msg: Msg | list[Msg] | str, limit: int | None = None) -> str:
        """The workspace's hits for the text of ``msg``, as text with paths and lines."""
        if isinstance(msg, str):
            query = msg
        else:
            batch = [msg] if isinstance(msg, Msg) else list(msg)
            query = "\n".join(m.get_text_content() or "" for m in batch)
        if not query.strip():
            return "No memory matched."
        hits = await asyncio.to_thread(
            self.store.search, query.strip(), limit or self.limit, self.min_score
        )
        return format_hits(hits)

    async def retrieve_from_memory(self, keywords: list[str], limit: int = 5) -> ToolChunk:
        """Retrieve memories from the long-term memory (notes and past sessions) by keywords.

        Args:
            keywords (list[str]):
                Keywords to search for: names, places, topics of the question.
            limit (int):
                The most memories to return (1 to 50).
        """
        words = [keywords] if isinstance(keywords, str) else list(keywords or [])
        query = " ".join(str(w).strip() for w in words if str(w).strip())
        if not query:
            return _chunk("Error: no keywords given.", error=True)
        try:
            text = await self.retrieve(query, limit=min(max(int(limit), 1), 50))
        except (StoreError, ValueError, TypeError) as exc:
            return _chunk(f"Error: memory search failed: {exc}", error=True)
        return _chunk(text)

    async def record_to_memory(self, thinking: str, content: list[str]) -> ToolChunk:
        """Record important information to the long-term memory for later sessions.

        Args:
            thinking (str):
                Why this is worth keeping.
            content (list[str]):
                The facts to keep, each one self-contained.
        """
        items = [content] if isinstance(content, str) else list(content or [])
        lines = [str(item).strip() for item in items if str(item).strip()]
        if not lines:
            return _chunk("Error: nothing to record (content is empty).", error=True)
        text = "Remember:\n" + "\n".join(f"- {line}" for line in lines)
        if thinking and str(thinking).strip():
            text += f"\n(Why: {str(thinking).strip()})"
        try:
            outputs = await asyncio.to_thread(
                self.store.record, self._session(None), [{"role": "assistant", "content": text}]
            )
        except StoreError as exc:
            return _chunk(f"Error: recording failed: {exc}", error=True)
        where = outputs.get("note") or outputs.get("transcript") or "the workspace"
        return _chunk(f"Recorded {len(lines)} item(s) in {where}.")

    def list_tools(self) -> list[ToolBase]:
        """The two tools, allowed without asking (they only reach this memory)."""
        allow = PermissionDecision(
            behavior=PermissionBehavior.ALLOW, message="reme long-term memory tool"
        )
        return [
            FunctionTool(self.retrieve_from_memory, is_read_only=True, permission=allow),
            FunctionTool(self.record_to_memory, is_concurrency_safe=False, permission=allow),
        ]

    # -- middleware hooks ------------------------------------------------------------------------

    async def on_reply(
        self, agent: Agent, input_kwargs: dict, next_handler: Callable[..., AsyncGenerator]
    ) -> AsyncGenerator:
        """Run the reply, then record the messages it added to the agent's context."""
        before = {m.id for m in agent.state.context if isinstance(m, Msg)}
        try:
            async for item in next_handler(**input_kwargs):
                yield item
        finally:
            if self.capture:
                new = [m for m in agent.state.context if isinstance(m, Msg) and m.id not in before]
                if any(m.role == "assistant" for m in new):
                    try:
                        await self.record(new, session_id=self.session_id or _agent_session(agent))
                    except StoreError as exc:  # capture must never fail the reply
                        log.warning("reme capture skipped: %s", exc)

    async def on_system_prompt(self, agent: Agent, current_prompt: str) -> str:
        return f"{current_prompt}\n\n{INSTRUCTIONS}"

    async def close(self) -> None:
        await asyncio.to_thread(self.store.close)

    def _session(self, given: str | None) -> str:
        if given:
            return given
        if self.session_id is None:
            self.session_id = f"agentscope-{secrets.token_hex(4)}"
        return self.session_id


def _agent_session(agent: Agent) -> str | None:
    """``agentscope-<the agent's session id>``, so each AgentScope session has its transcript."""
    session = getattr(getattr(agent, "state", None), "session_id", None)
    return f"agentscope-{session}" if session else None


def _chunk(text: str, *, error: bool = False) -> ToolChunk:
    state = ToolResultState.ERROR if error else ToolResultState.SUCCESS
    return ToolChunk(content=[TextBlock(type="text", text=text)], state=state)
