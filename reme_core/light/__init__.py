"""The agent-side context API: token budgets, compaction and in-session memory for an agent loop.

``AgentContext`` (sync) and ``AsyncAgentContext`` (asyncio) wrap an open ``Reme`` workspace:
``check_context``, ``compact_memory``, ``compact_tool_result``, ``pre_reasoning_hook`` (with
``await_summary_tasks``), ``memory_search`` and ``session_memory()`` (a ``SessionMemory``).
The pieces are usable alone too: ``check_context`` and ``TokenCounter`` need only a tokenizer.
"""

from reme_core.light.agent import AgentContext, HookResult, format_hits
from reme_core.light.aio import AsyncAgentContext
from reme_core.light.messages import ContextError, validate_messages
from reme_core.light.persist import PersistOutcome
from reme_core.light.session import MemoryUsage, SessionMemory
from reme_core.light.split import ContextSplit, check_context
from reme_core.light.summary import CompactResult, ContextSummary, compact_memory
from reme_core.light.tokens import TokenCounter
from reme_core.light.tool_results import ToolCompaction, ToolResultLimits, compact_tool_result

__all__ = [
    "AgentContext",
    "AsyncAgentContext",
    "CompactResult",
    "ContextError",
    "ContextSplit",
    "ContextSummary",
    "HookResult",
    "MemoryUsage",
    "PersistOutcome",
    "SessionMemory",
    "TokenCounter",
    "ToolCompaction",
    "ToolResultLimits",
    "check_context",
    "compact_memory",
    "compact_tool_result",
    "format_hits",
    "validate_messages",
]
