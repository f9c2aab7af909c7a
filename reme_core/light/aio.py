"""``AsyncAgentContext``: the same API for asyncio agent loops.

Each call runs the synchronous one in a worker thread (``asyncio.to_thread``), so a model call
for a summary or a slow disk never blocks the event loop. The background persistence is the
same worker thread as in the synchronous API; ``await_summary_tasks`` awaits it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from reme_core.light.agent import AgentContext, HookResult
from reme_core.light.persist import PersistOutcome
from reme_core.light.session import SessionMemory
from reme_core.light.split import ContextSplit
from reme_core.light.summary import CompactResult
from reme_core.schema import SearchResponse

if TYPE_CHECKING:
    from reme_core.runtime import Reme


class AsyncAgentContext:
    """``AgentContext`` with coroutine methods; ``sync`` is the wrapped synchronous object."""

    def __init__(self, reme: Reme | None = None, *, context: AgentContext | None = None, **kw: Any):
        if context is None:
            if reme is None:
                raise TypeError("AsyncAgentContext needs a Reme or an AgentContext")
            context = AgentContext(reme, **kw)
        self.sync = context

    @property
    def session_id(self) -> str:
        return self.sync.session_id

    def session_memory(self) -> SessionMemory:
        return self.sync.session_memory()

    async def check_context(
        self, messages: Sequence[Mapping[str, Any]], threshold: int, reserve: int = 10_000
    ) -> ContextSplit:
        return await asyncio.to_thread(self.sync.check_context, messages, threshold, reserve)

    async def compact_memory(
        self, messages: Sequence[Mapping[str, Any]], **kw: Any
    ) -> CompactResult:
        return await asyncio.to_thread(self.sync.compact_memory, messages, **kw)

    async def compact_tool_result(
        self, messages: Sequence[Mapping[str, Any]], **kw: Any
    ) -> list[dict[str, Any]]:
        return await asyncio.to_thread(self.sync.compact_tool_result, messages, **kw)

    async def pre_reasoning_hook(
        self, messages: Sequence[Mapping[str, Any]], **kw: Any
    ) -> tuple[list[dict[str, Any]], str]:
        return await asyncio.to_thread(self.sync.pre_reasoning_hook, messages, **kw)

    async def run_hook(self, messages: Sequence[Mapping[str, Any]], **kw: Any) -> HookResult:
        return await asyncio.to_thread(self.sync.run_hook, messages, **kw)

    async def prepare(
        self, memory: SessionMemory, system_prompt: str = "", **kw: Any
    ) -> tuple[list[dict[str, Any]], HookResult]:
        return await asyncio.to_thread(self.sync.prepare, memory, system_prompt, **kw)

    async def await_summary_tasks(self, timeout: float | None = None) -> list[PersistOutcome]:
        return await asyncio.to_thread(self.sync.await_summary_tasks, timeout)

    async def memory_search(
        self, query: str, max_results: int = 5, min_score: float = 0.1
    ) -> SearchResponse:
        return await asyncio.to_thread(self.sync.memory_search, query, max_results, min_score)

    async def aclose(self) -> None:
        await asyncio.to_thread(self.sync.close)

    async def __aenter__(self) -> AsyncAgentContext:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()
