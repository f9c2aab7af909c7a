"""``ReMeInMemoryMemory``: what ``ReMeLight.get_in_memory_memory()`` returns.

The messages of one session held in RAM with the running summary, as ReMe's class of that name:
``get_memory()`` puts the summary first, ``mark_messages_compressed`` drops messages from memory
after saving them, ``clear_content`` saves everything first. Saving goes through reme's
``SessionMemory`` (``reme_core.api``): one JSON line per message in
``sessions/dialog/<date>.jsonl``, secrets redacted, indexed like a transcript.
"""

from __future__ import annotations

from typing import Any

from agentscope.message import Msg, TextBlock

from reme_agentscope.messages import flatten
from reme_core.api import AgentContext

SUMMARY_HEADER = "# Summary of previous conversation"


class ReMeInMemoryMemory:
    """The in-session messages of one agent, and the summary of those compacted away."""

    def __init__(self, context: AgentContext):
        self._context = context
        self.content: list[tuple[Msg, list[str]]] = []
        self._compressed_summary = ""
        self._long_term_memory = ""

    async def add(self, memories: Msg | list[Msg] | None, marks: str | list[str] | None = None):
        """Append messages (a message already held, by id, is not added twice)."""
        batch = [] if memories is None else [memories] if isinstance(memories, Msg) else memories
        flatten(batch)  # the same check as every other entry point
        held = {m.id for m, _ in self.content}
        tags = [marks] if isinstance(marks, str) else list(marks or [])
        for msg in batch:
            if msg.id not in held:
                self.content.append((msg, list(tags)))
                held.add(msg.id)

    async def size(self) -> int:
        return len(self.content)

    async def get_memory(self, prepend_summary: bool = True, **_kwargs: Any) -> list[Msg]:
        """The messages held, after one user message with the long-term memory and the summary."""
        messages = [m for m, _ in self.content]
        parts = []
        if self._long_term_memory:
            parts.append(f"# Memories\n\n{self._long_term_memory}")
        if prepend_summary and self._compressed_summary:
            parts.append(
                f"{SUMMARY_HEADER}\n\nPrevious conversation logs are saved in "
                "sessions/dialog/YYYY-MM-DD.jsonl (or nearby dates). Here is the summary:\n\n"
                f"{self._compressed_summary}\nThe above is a summary of previous conversation, "
                "use it as context to maintain continuity."
            )
        if not parts:
            return messages
        summary = Msg(name="user", role="user", content=[TextBlock(text="\n\n".join(parts))])
        return [summary, *messages]

    def get_compressed_summary(self) -> str:
        return self._compressed_summary

    async def update_compressed_summary(self, summary: str) -> None:
        self._compressed_summary = summary

    def clear_compressed_summary(self) -> None:
        self._compressed_summary = ""

    def set_long_term_memory(self, text: str) -> None:
        """Text put first by ``get_memory`` (ReMe's ``_long_term_memory``)."""
        self._long_term_memory = text

    async def mark_messages_compressed(self, messages: list[Msg]) -> int:
        """Save ``messages`` to the dialog log and drop them from memory; how many were held."""
        if not messages:
            return 0
        self._save(messages)
        ids = {m.id for m in messages}
        before = len(self.content)
        self.content = [(m, marks) for m, marks in self.content if m.id not in ids]
        return before - len(self.content)

    def clear_content(self) -> None:
        """Save every message held, then forget them."""
        if self.content:
            self._save([m for m, _ in self.content])
        self.content.clear()

    def _save(self, messages: list[Msg]) -> None:
        # SessionMemory.clear saves every message it holds, once, then forgets them.
        memory = self._context.session_memory()
        memory.add(flatten(messages).dicts)
        memory.clear()

    async def estimate_tokens(self, max_input_length: int) -> dict[str, Any]:
        """Token statistics of ``get_memory(prepend_summary=False)`` plus the summary."""
        counter = self._context.counter
        messages = [m for m, _ in self.content]
        per_message = [counter.messages(flatten([m]).dicts) for m in messages]
        summary_tokens = counter.text(self._compressed_summary)
        total = sum(per_message) + summary_tokens
        return {
            "total_messages": len(messages),
            "compressed_summary_tokens": summary_tokens,
            "messages_tokens": sum(per_message),
            "estimated_tokens": total,
            "max_input_length": max_input_length,
            "context_usage_ratio": (total / max_input_length * 100) if max_input_length > 0 else 0,
            "messages_detail": [
                {"role": m.role, "total_tokens": n, "preview": (m.get_text_content() or "")[:100]}
                for m, n in zip(messages, per_message, strict=True)
            ],
        }

    def state_dict(self) -> dict[str, Any]:
        return {
            "content": [[m.model_dump(mode="json"), marks] for m, marks in self.content],
            "_compressed_summary": self._compressed_summary,
        }

    def load_state_dict(self, state_dict: dict[str, Any], strict: bool = True) -> None:
        """Replace the content with a ``state_dict`` (checked whole before anything changes)."""
        if strict and "content" not in state_dict:
            raise KeyError("the state_dict has no 'content'")
        content: list[tuple[Msg, list[str]]] = []
        for item in state_dict.get("content", []):
            if isinstance(item, list | tuple) and len(item) == 2:
                content.append((Msg.model_validate(item[0]), list(item[1])))
            elif isinstance(item, dict):
                content.append((Msg.model_validate(item), []))
            else:
                raise ValueError("each content item must be [message, marks] or a message")
        self.content = content
        self._compressed_summary = str(state_dict.get("_compressed_summary", ""))
