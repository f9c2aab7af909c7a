"""``ReMeLight``: the memory manager AgentScope agents (CoPaw / QwenPaw) inherit from, over reme.

ReMe (``reme-ai`` 0.3.x, ``reme.reme_light.ReMeLight``) shipped it; this class keeps its method
names, parameters, defaults and return shapes (tests/integrations/remelight_signatures.json pins
them), so ``class MyMemory(ReMeLight)`` switches by changing the import. The work is done by
``reme_core.light`` on a reme workspace: tool outputs spilled to ``tool_results/``, structured
summaries, background persistence through ``auto_memory`` (``sessions/`` and ``daily/``), and
hybrid search. What differs is in README.md ("Differences from ReMe's ReMeLight").

Every method is a coroutine, as in ReMe; the synchronous reme work runs in a worker thread so a
summary's model call never blocks the agent's event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentscope.message import Msg, TextBlock
from agentscope.tool import ToolResponse

from reme_agentscope.in_memory import ReMeInMemoryMemory
from reme_agentscope.messages import (
    Flattened,
    flatten,
    transcript,
    without_hints,
    write_back_results,
)
from reme_agentscope.settings import light_overrides, load_env_file
from reme_core.api import AgentContext, Reme, RemeError, catch_up, format_hits, init_workspace

log = logging.getLogger(__name__)


class ReMeLight:
    """ReMe's ``ReMeLight`` API on a reme workspace at ``working_dir``."""

    def __init__(
        self,
        working_dir: str = ".reme",
        llm_api_key: str | None = None,
        llm_base_url: str | None = None,
        embedding_api_key: str | None = None,
        embedding_base_url: str | None = None,
        default_as_llm_config: dict | None = None,
        default_embedding_model_config: dict | None = None,
        default_file_store_config: dict | None = None,
        default_file_watcher_config: dict | None = None,
        vector_weight: float = 0.7,
        candidate_multiplier: float = 3.0,
        enable_load_env: bool = False,
        *,
        overrides: Sequence[str] = (),
        session_id: str | None = None,
    ):
        self.working_path = Path(working_dir).absolute()
        # reme's folders for what ReMeLight kept in memory/, tool_results/ and dialog/.
        self.memory_path = self.working_path / "daily"
        self.tool_result_path = self.working_path / "tool_results"
        self.dialog_path = self.working_path / "sessions" / "dialog"
        self.vector_weight = vector_weight
        self.candidate_multiplier = candidate_multiplier
        if enable_load_env:
            load_env_file(Path.cwd() / ".env")
        # Checked now, so a bad argument fails at construction and nothing is opened.
        self.overrides = light_overrides(
            llm_api_key=llm_api_key,
            llm_base_url=llm_base_url,
            embedding_api_key=embedding_api_key,
            embedding_base_url=embedding_base_url,
            default_as_llm_config=default_as_llm_config,
            default_embedding_model_config=default_embedding_model_config,
            default_file_store_config=default_file_store_config,
            default_file_watcher_config=default_file_watcher_config,
            vector_weight=vector_weight,
            candidate_multiplier=candidate_multiplier,
        ) + list(overrides)
        self.session_id = session_id
        self.summary_tasks: list[asyncio.Task] = []
        self.reme: Reme | None = None
        self._context: AgentContext | None = None

    # -- lifecycle -------------------------------------------------------------------------------

    @staticmethod
    def calculate_memory_compact_threshold(max_input_length: float, compact_ratio: float) -> int:
        """The token count over which messages are compacted (as ReMe: ``* 0.95``)."""
        return int(max_input_length * compact_ratio * 0.95)

    async def start(self) -> ReMeLight:
        """Open the workspace (created if new), index what changed, drop expired tool results."""
        if self._context is None:
            self._context = await asyncio.to_thread(self._open)
        return self

    def _open(self) -> AgentContext:
        if not (self.working_path / ".reme").is_dir():
            init_workspace(self.working_path)
        reme = Reme.open(self.working_path, overrides=self.overrides)
        try:
            catch_up(reme)
            context = AgentContext(reme, session_id=self.session_id)
            context.spills.cleanup(3)
        except BaseException:
            reme.close()
            raise
        self.reme = reme
        return context

    async def close(self) -> bool:
        """Wait for background persistence, then close the workspace."""
        context, self._context = self._context, None
        if context is None:
            return True
        try:
            await asyncio.to_thread(context.spills.cleanup, 3)
            await asyncio.to_thread(context.close)
        finally:
            reme, self.reme = self.reme, None
            if reme is not None:
                await asyncio.to_thread(reme.close)
        return True

    @property
    def context(self) -> AgentContext:
        if self._context is None:
            raise RuntimeError("ReMeLight is not started: await start() first")
        return self._context

    @property
    def default_as_token_counter(self) -> Any:
        """reme's token counter (``components.tokenizer``), which every count here uses."""
        return self.context.counter

    # -- context ---------------------------------------------------------------------------------

    async def compact_tool_result(
        self,
        messages: list[Msg],
        old_max_bytes: int = 3000,
        recent_max_bytes: int = 100 * 1024,
        retention_days: int = 3,
        recent_n: int = 1,
    ) -> list[Msg]:
        """Cut long tool outputs in place (the whole output goes to ``tool_results/<id>.txt``,
        the cut names it); returns ``messages``. On a reme failure it logs and returns them."""
        flat = flatten(messages)
        try:
            result = await asyncio.to_thread(
                self.context.compact_tool_results,
                flat.dicts,
                recent_n,
                recent_max_bytes,
                old_max_bytes,
                retention_days,
            )
        except RemeError as exc:
            log.error("compacting tool results failed: %s", exc)
            return messages
        write_back_results(flat, result.messages)
        return flat.messages

    async def check_context(
        self,
        messages: list[Msg],
        memory_compact_threshold: int,
        memory_compact_reserve: int = 10000,
        as_token_counter: Any = "default",
    ) -> tuple[list[Msg], list[Msg], bool]:
        """``(messages_to_compact, messages_to_keep, is_valid)``: ``([], messages, True)`` when
        under the threshold; ``is_valid`` is false when no cut keeps tool calls with results."""
        _counted_by_reme(as_token_counter)
        flat = flatten(messages)
        try:
            split = await asyncio.to_thread(
                self.context.check_context,
                flat.dicts,
                max(1, int(memory_compact_threshold)),
                int(memory_compact_reserve),
            )
        except RemeError as exc:
            log.error("checking the context failed: %s", exc)
            return [], list(messages), False
        if not split.to_compact:
            return [], list(messages), split.is_valid
        to_compact, to_keep = flat.split(len(split.to_compact), _leading_system(flat))
        if not to_compact:  # the cut fell inside the first message: nothing whole can go
            return [], list(messages), False
        return to_compact, to_keep, True

    async def compact_memory(
        self,
        messages: list[Msg],
        as_llm: Any = "default",
        as_llm_formatter: Any = "default",
        as_token_counter: Any = "default",
        language: str = "zh",
        max_input_length: float = 128 * 1024,
        compact_ratio: float = 0.7,
        previous_summary: str = "",
        return_dict: bool = False,
        add_thinking_block: bool = True,
        extra_instruction: str = "",
    ) -> str | dict:
        """A structured summary of ``messages`` (updating ``previous_summary``); with
        ``return_dict``, ``{"user_message", "history_compact", "is_valid"}``. On a failure it
        logs and returns ``""`` (or the dict with ``is_valid`` false), as ReMe does."""
        _summarised_by_reme(as_llm, as_llm_formatter)
        _counted_by_reme(as_token_counter)
        flat = flatten(messages)
        try:
            result = await asyncio.to_thread(
                self.context.compact_memory,
                flat.dicts,
                previous_summary,
                int(max_input_length),
                compact_ratio,
                _language(language),
                extra_instruction,
            )
        except RemeError as exc:
            log.error("compacting memory failed: %s", exc)
            if return_dict:
                return {"user_message": str(exc), "history_compact": str(exc), "is_valid": False}
            return ""
        if not return_dict:
            return result.text
        memory = self.context.session_memory()
        memory.update_summary(result.text)
        return {
            "user_message": memory.summary_message()["content"],
            "history_compact": result.text,
            "is_valid": True,
        }

    async def summary_memory(
        self,
        messages: list[Msg],
        as_llm: Any = "default",
        as_llm_formatter: Any = "default",
        as_token_counter: Any = "default",
        toolkit: Any | None = None,
        language: str = "zh",
        max_input_length: float = 128 * 1024,
        compact_ratio: float = 0.7,
        timezone: str | None = None,
        add_thinking_block: bool = True,
    ) -> str:
        """Persist ``messages`` for the long term through reme's ``auto_memory``: the transcript
        under ``sessions/`` and the session's note under ``daily/``. Returns what was written
        (``""`` on a failure, which is logged)."""
        _summarised_by_reme(as_llm, as_llm_formatter)
        params: dict[str, Any] = {
            "session_id": self.context.session_id,
            "messages": transcript(flatten(without_hints(messages)).dicts),
        }
        if timezone:
            params["date"] = _today(timezone)
        try:
            result = await asyncio.to_thread(self.context.reme.run, "auto_memory", params)
        except RemeError as exc:
            log.error("summarising memory failed: %s", exc)
            return ""
        outputs = result.outputs
        notes = [str(n.get("path")) for n in outputs.get("notes", []) if n.get("path")]
        return (
            f"saved {outputs.get('added', 0)} turns to {outputs.get('transcript')}; "
            f"notes: {', '.join(notes) or 'none'} ({outputs.get('status', 'saved')})"
        )

    def add_async_summary_task(self, messages: list[Msg], **kwargs: Any) -> None:
        """Run ``summary_memory(messages, **kwargs)`` in the background; finished tasks are
        logged and dropped first."""
        remaining = []
        for task in self.summary_tasks:
            if not task.done():
                remaining.append(task)
            elif task.cancelled():
                log.warning("Summary task was cancelled.")
            elif task.exception() is not None:
                log.error("Summary task failed: %s", task.exception())
            else:
                log.info("Summary task completed: %s", task.result())
        self.summary_tasks = remaining
        self.summary_tasks.append(
            asyncio.create_task(self.summary_memory(messages=messages, **kwargs))
        )

    async def pre_reasoning_hook(
        self,
        messages: list[Msg],
        system_prompt: str = "",
        compressed_summary: str = "",
        as_llm: Any = "default",
        as_llm_formatter: Any = "default",
        as_token_counter: Any = "default",
        toolkit: Any | None = None,
        language: str = "zh",
        max_input_length: float = 128 * 1024,
        compact_ratio: float = 0.7,
        memory_compact_reserve: int = 10000,
        enable_tool_result_compact: bool = True,
        tool_result_compact_keep_n: int = 3,
    ) -> tuple[list[Msg], str]:
        """Before a model call: cut old tool outputs, and when over the threshold fold the oldest
        messages into the summary (persisting them in the background). Returns
        ``(messages to keep, summary)``; ``(messages, compressed_summary)`` when nothing is cut."""
        counter = self.context.counter
        overhead = counter.text(system_prompt) + counter.text(compressed_summary)
        threshold = self.calculate_memory_compact_threshold(max_input_length, compact_ratio)
        if enable_tool_result_compact and tool_result_compact_keep_n > 0:
            # Msg blocks are cut in place (as ReMe does); chat dicts come back as new dicts.
            keep_n = tool_result_compact_keep_n
            head = await self.compact_tool_result(messages[:-keep_n])
            messages = [*head, *messages[len(head) :]]
        to_compact, to_keep, is_valid = await self.check_context(
            messages=messages,
            memory_compact_threshold=threshold - overhead,
            memory_compact_reserve=memory_compact_reserve,
            as_token_counter=as_token_counter,
        )
        if not to_compact:
            return messages, compressed_summary
        if not is_valid:
            log.warning("Invalid messages to compact, skipping.")
            return messages, compressed_summary
        self.add_async_summary_task(
            messages=to_compact,
            as_llm=as_llm,
            as_llm_formatter=as_llm_formatter,
            as_token_counter=as_token_counter,
            toolkit=toolkit,
            language=language,
            max_input_length=max_input_length,
            compact_ratio=compact_ratio,
        )
        summary = await self.compact_memory(
            messages=to_compact,
            as_llm=as_llm,
            as_llm_formatter=as_llm_formatter,
            as_token_counter=as_token_counter,
            language=language,
            max_input_length=max_input_length,
            compact_ratio=compact_ratio,
            previous_summary=compressed_summary,
        )
        return to_keep, str(summary) or compressed_summary

    async def await_summary_tasks(self) -> str:
        """Wait for every background summary; one status line per task, as ReMe reports."""
        lines: list[str] = []
        for task in self.summary_tasks:
            try:
                lines.append(f"Summary task completed: {await task}")
            except asyncio.CancelledError:
                lines.append("Summary task was cancelled.")
            except Exception as exc:  # a task's failure is reported, not raised (as ReMe)
                lines.append(f"Summary task failed: {exc}")
        self.summary_tasks.clear()
        return "".join(f"{line}\n" for line in lines)

    # -- memory ----------------------------------------------------------------------------------

    async def memory_search(
        self, query: str, max_results: int = 5, min_score: float = 0.1
    ) -> ToolResponse:
        """Search the workspace (notes, saved sessions); the hits as one text block, each with
        its path and lines."""
        if not query:
            return _response("Error: No query provided.")
        limit = _clamped(max_results, int, 5, 1, 100)
        score = _clamped(min_score, float, 0.1, 0.001, 0.999)
        try:
            hits = await asyncio.to_thread(self.context.memory_search, str(query), limit, score)
        except RemeError as exc:
            return _response(f"Error: memory search failed: {exc}")
        return _response(format_hits(hits))

    def get_in_memory_memory(self, as_token_counter: Any | None = None) -> ReMeInMemoryMemory:
        """A new in-session memory whose compressed and cleared messages are saved to
        ``sessions/dialog/<date>.jsonl`` of this workspace."""
        _counted_by_reme(as_token_counter or "default")
        return ReMeInMemoryMemory(self.context)


def _leading_system(flat: Flattened) -> int:
    count = 0
    while count < len(flat.dicts) and flat.dicts[count].get("role") == "system":
        count += 1
    return count


def _language(language: str) -> str:
    return "zh" if language == "zh" else "en"


def _today(timezone: str) -> str:
    import datetime as dt
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return dt.datetime.now(ZoneInfo(timezone)).date().isoformat()
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"unknown timezone {timezone!r} (an IANA name such as 'Asia/Shanghai')"
        ) from None


def _clamped(value: Any, kind: type, default: Any, low: Any, high: Any) -> Any:
    """ReMe's lenient parsing of tool arguments: numbers or numeric strings, clamped."""
    try:
        number = kind(value)
    except (TypeError, ValueError):
        return default
    return min(max(number, low), high)


def _response(text: str) -> ToolResponse:
    return ToolResponse(content=[TextBlock(type="text", text=text)])


_WARNED: set[str] = set()


def _summarised_by_reme(as_llm: Any, as_llm_formatter: Any) -> None:
    """reme summarises with the workspace's model (``components.llm``), not a passed one."""
    if (as_llm != "default" or as_llm_formatter != "default") and "llm" not in _WARNED:
        _WARNED.add("llm")
        log.warning(
            "reme summarises with the workspace's model (components.llm, or the llm_* arguments "
            "of ReMeLight); the as_llm / as_llm_formatter passed are not used"
        )


def _counted_by_reme(as_token_counter: Any) -> None:
    if as_token_counter not in ("default", None) and "counter" not in _WARNED:
        _WARNED.add("counter")
        log.warning(
            "reme counts tokens with the workspace's tokenizer (components.tokenizer); the "
            "as_token_counter passed is not used"
        )
