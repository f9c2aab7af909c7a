"""``AgentContext``: the context API an agent loop calls, on one open workspace.

    with Reme.open(workspace) as reme:
        context = AgentContext(reme, session_id="s1")
        messages, summary = context.pre_reasoning_hook(messages, system_prompt, summary)
        ...
        context.await_summary_tasks()     # before exit: compacted turns are in daily notes

Token counts use ``reme.tokenizer`` (``components.tokenizer``); summaries use ``reme.llm``
unless another model is given; compacted turns are persisted through the ``auto_memory``
pipeline (``pipelines.auto_memory``, with its own model if configured there).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reme_core.components import Llm
from reme_core.light.messages import ContextError, leading_system, validate_messages
from reme_core.light.persist import Persister, PersistOutcome, new_session_id
from reme_core.light.session import SessionMemory
from reme_core.light.split import ContextSplit, check_context
from reme_core.light.summary import (
    PROMPTS_NAME,
    PROMPTS_PACKAGE,
    CompactResult,
    compact_memory,
    input_budget,
)
from reme_core.light.tokens import TokenCounter
from reme_core.light.tool_results import (
    SpillStore,
    ToolCompaction,
    ToolResultLimits,
    compact_tool_result,
)
from reme_core.pipelines.prompts import Prompts, load_prompts
from reme_core.schema import SearchResponse

if TYPE_CHECKING:
    from reme_core.runtime import Reme

THRESHOLD_MARGIN = 0.95
"""The compaction threshold is this share of ``max_input_length * compact_ratio``: counts are
estimates, and the next reply needs room too."""
_CONFIGURED = object()


@dataclass
class HookResult:
    """Everything ``pre_reasoning_hook`` did; the hook itself returns ``(messages, summary)``."""

    messages: list[dict[str, Any]]
    summary: str
    threshold: int
    tools: ToolCompaction
    split: ContextSplit
    compacted: list[dict[str, Any]]
    """The messages folded into the summary (and sent to be persisted)."""
    compact: CompactResult | None = None

    def __iter__(self) -> Any:
        return iter((self.messages, self.summary))


class AgentContext:
    """Context management for one agent session on an open workspace (thread-safe to read)."""

    def __init__(
        self,
        reme: Reme,
        *,
        session_id: str | None = None,
        language: str | None = None,
        llm: Llm | object | None = _CONFIGURED,
        persist_pipeline: str | None = "auto_memory",
    ):
        self.reme = reme
        self.session_id = session_id or new_session_id()
        self.language = language or reme.settings.language
        self.llm: Llm | None = reme.llm if llm is _CONFIGURED else llm  # type: ignore[assignment]
        self.counter = TokenCounter(reme.tokenizer)
        self.spills = SpillStore(reme.paths)
        self.persister = (
            Persister(reme, self.session_id, persist_pipeline) if persist_pipeline else None
        )

    # -- counting --------------------------------------------------------------------------------

    def prompts(self, language: str | None = None) -> Prompts:
        return load_prompts(PROMPTS_PACKAGE, PROMPTS_NAME, language or self.language)

    def count_tokens(self, text: str) -> int:
        return self.counter.text(text)

    def count_messages(self, messages: Sequence[Mapping[str, Any]]) -> int:
        return self.counter.messages(validate_messages(messages))

    # -- the four operations ---------------------------------------------------------------------

    def check_context(
        self, messages: Sequence[Mapping[str, Any]], threshold: int, reserve: int = 10_000
    ) -> ContextSplit:
        """``(to_compact, to_keep, is_valid)``: see ``reme_core.light.split.check_context``."""
        return check_context(messages, threshold, reserve, self.counter)

    def compact_memory(
        self,
        messages: Sequence[Mapping[str, Any]],
        previous_summary: str = "",
        max_input_length: int = 128_000,
        compact_ratio: float = 0.7,
        language: str | None = None,
        extra_instruction: str = "",
    ) -> CompactResult:
        """A structured summary of ``messages``, updating ``previous_summary`` when given;
        ``extra_instruction`` is added to the summary prompt (what to keep or leave out)."""
        return self._summarize(
            validate_messages(messages),
            previous_summary,
            max_input_length,
            compact_ratio,
            language,
            extra_instruction,
        )

    def compact_tool_result(
        self,
        messages: Sequence[Mapping[str, Any]],
        recent_n: int = 1,
        recent_max_bytes: int = 100 * 1024,
        old_max_bytes: int = 3000,
        retention_days: float | None = 3,
    ) -> list[dict[str, Any]]:
        """``messages`` with long tool outputs cut and spilled to ``tool_results/<id>.txt``."""
        return self.compact_tool_results(
            messages, recent_n, recent_max_bytes, old_max_bytes, retention_days
        ).messages

    def compact_tool_results(
        self,
        messages: Sequence[Mapping[str, Any]],
        recent_n: int = 1,
        recent_max_bytes: int = 100 * 1024,
        old_max_bytes: int = 3000,
        retention_days: float | None = 3,
    ) -> ToolCompaction:
        """``compact_tool_result`` with what it wrote, cut and removed."""
        limits = ToolResultLimits(
            recent_n=recent_n,
            recent_max_bytes=recent_max_bytes,
            old_max_bytes=old_max_bytes,
            retention_days=retention_days,
        )
        return compact_tool_result(messages, self.spills, self.prompts(), limits)

    def pre_reasoning_hook(
        self,
        messages: Sequence[Mapping[str, Any]],
        system_prompt: str = "",
        compressed_summary: str = "",
        max_input_length: int = 128_000,
        compact_ratio: float = 0.7,
        reserve: int = 10_000,
        keep_recent_tool_results: int = 3,
    ) -> tuple[list[dict[str, Any]], str]:
        """Before a model call: ``(messages to send, summary)`` within the budget."""
        result = self.run_hook(
            messages,
            system_prompt,
            compressed_summary,
            max_input_length,
            compact_ratio,
            reserve,
            keep_recent_tool_results,
        )
        return result.messages, result.summary

    def run_hook(
        self,
        messages: Sequence[Mapping[str, Any]],
        system_prompt: str = "",
        compressed_summary: str = "",
        max_input_length: int = 128_000,
        compact_ratio: float = 0.7,
        reserve: int = 10_000,
        keep_recent_tool_results: int = 3,
    ) -> HookResult:
        """``pre_reasoning_hook`` with a report of each stage.

        1. Tool outputs: the last ``keep_recent_tool_results`` cut lightly, older ones hard.
        2. The threshold: ``max_input_length * compact_ratio`` (times 0.95) less the tokens of
           the system prompt and of the current summary.
        3. ``check_context`` against it, keeping ``reserve`` tokens of recent messages.
        4. When something is cut: the cut messages go to auto_memory in the background, and
           the summary is updated with them now (synchronously, with the model).

        When no valid cut exists the messages are returned as they are after step 1.
        """
        budget = int(input_budget(max_input_length, compact_ratio) * THRESHOLD_MARGIN)
        tools = self.compact_tool_results(messages, recent_n=keep_recent_tool_results)
        overhead = self.counter.text(system_prompt) + self.counter.text(compressed_summary)
        threshold = max(1, budget - overhead)
        split = check_context(tools.messages, threshold, reserve, self.counter)
        if not split.to_compact or not split.is_valid:
            return HookResult(tools.messages, compressed_summary, threshold, tools, split, [])
        compacted = split.to_compact
        if self.persister is not None:
            self.persister.submit(_originals(compacted, messages))
        compact = self._summarize(compacted, compressed_summary, max_input_length, compact_ratio)
        return HookResult(split.to_keep, compact.text, threshold, tools, split, compacted, compact)

    def prepare(
        self, memory: SessionMemory, system_prompt: str = "", **hook: Any
    ) -> tuple[list[dict[str, Any]], HookResult]:
        """Run the hook on a session memory and update it: the messages for the next model
        call (summary first) and the hook's report. ``hook`` takes the hook's parameters."""
        result = self.run_hook(
            memory.get_memory(prepend_summary=False),
            system_prompt,
            memory.summary,
            **hook,
        )
        if result.compacted:
            memory.mark_messages_compressed(result.compacted)
            memory.update_summary(result.summary)
        return memory.with_summary(result.messages), result

    def await_summary_tasks(self, timeout: float | None = None) -> list[PersistOutcome]:
        """Wait for the background persistence of compacted messages; one outcome per batch."""
        return [] if self.persister is None else self.persister.wait(timeout)

    def _summarize(
        self,
        messages: list[dict[str, Any]],
        previous_summary: str,
        max_input_length: int,
        compact_ratio: float,
        language: str | None = None,
        extra_instruction: str = "",
    ) -> CompactResult:
        """``compact_memory`` with this context's model, counter and prompts (messages checked)."""
        return compact_memory(
            messages,
            llm=self.llm,
            counter=self.counter,
            prompts=self.prompts(language),
            previous_summary=previous_summary,
            max_input_length=max_input_length,
            compact_ratio=compact_ratio,
            extra_instruction=extra_instruction,
        )

    # -- memory ----------------------------------------------------------------------------------

    def memory_search(
        self, query: str, max_results: int = 5, min_score: float = 0.1
    ) -> SearchResponse:
        """Hybrid search over the workspace (notes, saved transcripts, dialogs)."""
        if not isinstance(query, str) or not query.strip():
            raise ContextError("memory_search needs a query (text)")
        limit = min(max(int(max_results), 1), 200)
        score = min(max(float(min_score), 0.0), 1.0)
        return self.reme.search(query, limit=limit, min_score=score)

    def session_memory(self) -> SessionMemory:
        """A new in-session memory that persists to ``sessions/dialog/`` of this workspace."""
        return SessionMemory(
            self.counter,
            self.prompts(),
            self.session_id,
            files=self.reme.files,
            tz=self.reme.settings.tzinfo(),
        )

    def close(self) -> None:
        """Wait for background persistence and stop its thread (the workspace stays open)."""
        if self.persister is not None:
            self.persister.close()

    def __enter__(self) -> AgentContext:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def format_hits(response: SearchResponse, max_chars: int = 800) -> str:
    """Search hits as text for a tool result: path, lines and score, then the text."""
    if not response.hits:
        return "No memory matched."
    blocks = []
    for hit in response.hits:
        text = hit.text if len(hit.text) <= max_chars else hit.text[: max_chars - 3] + "..."
        where = f"{hit.path}#L{hit.start_line}-L{hit.end_line}"
        blocks.append(f"{where} (score {hit.score:.2f})\n{text}")
    return "\n\n".join(blocks)


def _originals(
    compacted: list[dict[str, Any]], messages: Sequence[Mapping[str, Any]]
) -> list[Mapping[str, Any]]:
    """The caller's versions of the compacted messages (tool outputs not cut), by position:
    tool compaction keeps positions, and the compacted ones are a prefix after any system
    messages."""
    start = leading_system(messages)
    return list(messages[start : start + len(compacted)])
