"""Memory extraction: one structured model call turns messages into memories of one scope.

The prompt shows the conversation (the most recent part that fits the budget) and the scope's
existing records with their ids, so the model can say a memory refines one instead of repeating
it. The answer is validated in full (and retried by the model component) before anything is
written: an answer that never validates is an ``LlmError`` and leaves the workspace as it was.

Secrets are redacted (``reme_core.redact``) twice: in the conversation before the model sees it,
so it has none to copy, and in every text field of its answer, which becomes a record on disk:
a model may still repeat a secret (from an existing record, or one the patterns missed in a
different spelling), and only the answer's redaction guarantees none is written.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from reme_core.components import Llm, estimate_tokens
from reme_core.errors import WorkspaceError
from reme_core.memory.models import MemoryMessage, MemoryRecord, MemoryScope, MemoryType
from reme_core.memory.note import clean_content, clean_text
from reme_core.pipelines.budget import fit
from reme_core.pipelines.prompts import Prompts
from reme_core.redact import redact, redact_data

PROMPTS = ("reme_core.memory", "summarize_memory")
"""The prompt file: ``reme_core/memory/prompts/summarize_memory.yaml``."""
MAX_MEMORIES = 20
TRANSCRIPT_TOKENS = 12_000
EXISTING_IN_PROMPT = 40
EXISTING_TOKENS = 200
"""How much of each existing record the prompt shows."""


class ExtractedMemory(BaseModel):
    """One memory the model proposes. Fields that do not apply to the type are ignored."""

    model_config = ConfigDict(extra="ignore")

    content: str
    when_to_use: str = ""
    refines: str | None = None
    """The id of an existing record of this scope that this memory updates."""
    outcome: Literal["success", "failure", "mixed"] | None = None
    """Procedural: how the task went."""
    success_rate: float | None = Field(None, ge=0, le=1)
    avg_cost: float | None = Field(None, ge=0)
    cost_unit: str | None = None
    tips: list[str] = Field(default_factory=list)

    @field_validator("content", "when_to_use", "cost_unit", "tips", mode="before")
    @classmethod
    def _redacted(cls, value: Any) -> Any:
        # Every text field may end up in a record on disk.
        return redact_data(value)[0]

    @field_validator("content")
    @classmethod
    def _content(cls, value: str) -> str:
        try:
            return clean_content(value)
        except WorkspaceError as exc:  # a ValueError makes the model component retry
            raise ValueError(str(exc)) from None

    @field_validator("when_to_use")
    @classmethod
    def _when(cls, value: str) -> str:
        try:
            return clean_text(value, "when_to_use")
        except WorkspaceError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("refines")
    @classmethod
    def _refines(cls, value: str | None) -> str | None:
        return (value or "").strip() or None

    def metadata(self, kind: MemoryType) -> dict[str, Any]:
        """The metadata keys this memory sets for a record of type ``kind``."""
        if kind == "procedural":
            return {"outcome": self.outcome} if self.outcome else {}
        if kind == "tool":
            found = {
                "success_rate": self.success_rate,
                "avg_cost": self.avg_cost,
                "cost_unit": (self.cost_unit or "").strip() or None,
                "tips": [t.strip() for t in self.tips if t.strip()] or None,
            }
            return {k: v for k, v in found.items() if v is not None}
        return {}


class MemoryExtraction(BaseModel):
    """The model's whole answer: ``memories`` is required, so an answer without it (or not JSON
    at all) fails validation rather than reading as "nothing to remember"."""

    memories: list[ExtractedMemory] = Field(max_length=MAX_MEMORIES)


def transcript(messages: list[MemoryMessage], budget: int = TRANSCRIPT_TOKENS) -> str:
    """The conversation as text, newest messages kept when it is over ``budget``."""
    rendered = [_render(m) for m in messages]
    kept: list[str] = []
    used = 0
    for text in reversed(rendered):
        cost = estimate_tokens(text) + 1
        if used + cost > budget:
            if not kept:  # one message over the budget: its start is better than nothing
                kept.append(fit(text, budget) + "\n[... cut]")
            break
        kept.append(text)
        used += cost
    left_out = len(rendered) - len(kept)
    head = [f"[{left_out} earlier message(s) left out]"] if left_out else []
    return "\n\n".join(head + kept[::-1])


def _render(message: MemoryMessage) -> str:
    who = f"tool {message.name}" if message.role == "tool" and message.name else message.role
    text = message.text
    if message.tool_calls:
        calls = json.dumps(message.tool_calls, ensure_ascii=False, default=str)
        text = f"{text}\n(tool calls: {calls})" if text else f"(tool calls: {calls})"
    return f"[{who}]\n{redact(text)[0]}"


def existing_block(records: list[MemoryRecord]) -> str:
    """The scope's records the model may refine, most recently updated first."""
    shown = sorted(records, key=lambda r: r.updated, reverse=True)[:EXISTING_IN_PROMPT]
    if not shown:
        return "(none yet)"
    parts = []
    for record in shown:
        lines = [f'<memory id="{record.memory_id}">']
        if record.when_to_use:
            lines.append(f"when_to_use: {record.when_to_use}")
        if record.metadata:
            lines.append(
                f"metadata: {json.dumps(record.metadata, ensure_ascii=False, default=str)}"
            )
        lines += [fit(record.content, EXISTING_TOKENS), "</memory>"]
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def extract(
    llm: Llm,
    prompts: Prompts,
    scope: MemoryScope,
    messages: list[MemoryMessage],
    existing: list[MemoryRecord],
) -> list[ExtractedMemory]:
    """Ask the model once; LlmError (from the model component) when no answer validates."""
    chat = [
        {"role": "system", "content": prompts.render(f"system_{scope.memory_type}")},
        {
            "role": "user",
            "content": prompts.render(
                "user",
                scope_key=scope.key,
                scope_value=scope.value,
                max_memories=MAX_MEMORIES,
                existing=existing_block(existing),
                transcript=transcript(messages),
            ),
        },
    ]
    return llm.structured(chat, MemoryExtraction).memories
