"""OpenAI-style chat messages as the context API takes them: checked at the boundary, rendered as
text for counting and prompts, and the places where a list may be cut.

A message is ``{role, content, tool_calls?, tool_call_id?, name?, ...}``; keys the API does not
know are kept as they are. A tool message answers the assistant message that holds its call id,
so a list may only be cut where no call made before the cut is answered after it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from reme_core.errors import RemeError

Role = Literal["system", "user", "assistant", "tool"]
NON_TEXT_PART_TOKENS = 85
"""What an image or other non-text part is counted as (OpenAI's price of a low-detail image)."""


class ContextError(RemeError):
    """Messages or parameters the context API cannot work with."""


class ToolFunction(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str = ""
    arguments: str | dict[str, Any] = ""


class ToolCall(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str = Field(min_length=1)
    type: str = "function"
    function: ToolFunction = Field(default_factory=ToolFunction)


class ChatMessage(BaseModel):
    """The shape checked at the boundary; the API keeps working on the caller's dicts."""

    model_config = ConfigDict(extra="allow")

    role: Role
    content: str | list[Any] | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None

    @model_validator(mode="after")
    def _check_tool_links(self) -> ChatMessage:
        if self.role == "tool" and not self.tool_call_id:
            raise ValueError("a tool message needs the tool_call_id of the call it answers")
        if self.tool_calls and self.role != "assistant":
            raise ValueError("only assistant messages carry tool_calls")
        return self


def validate_messages(messages: Any) -> list[dict[str, Any]]:
    """Check a list of messages; return shallow copies, so changes never reach the caller's."""
    if not isinstance(messages, list | tuple):
        raise ContextError(
            f"messages must be a list of {{role, content}} objects, not {type(messages).__name__}"
        )
    out: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise ContextError(f"messages[{index}] must be an object, not {type(message).__name__}")
        try:
            ChatMessage.model_validate(dict(message))
        except ValidationError as exc:
            problem = exc.errors()[0]
            where = ".".join(str(p) for p in problem["loc"])
            where = f"messages[{index}]" + (f".{where}" if where else "")
            raise ContextError(f"{where}: {problem['msg']}") from None
        out.append(dict(message))
    return out


def content_text(content: Any) -> str:
    """The text of a content field: a string, or the text parts of a list of parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            part if isinstance(part, str) else str(part.get("text", ""))
            for part in content
            if isinstance(part, str) or (isinstance(part, dict) and "text" in part)
        ]
        return "\n".join(texts)
    return str(content)


def non_text_parts(message: Mapping[str, Any]) -> int:
    """Parts of the content that are not text (images, audio)."""
    content = message.get("content")
    if not isinstance(content, list):
        return 0
    return sum(
        1 for p in content if not (isinstance(p, str) or (isinstance(p, dict) and "text" in p))
    )


def tool_calls(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The tool calls an assistant message makes (empty for any other message)."""
    calls = message.get("tool_calls") if message.get("role") == "assistant" else None
    return [c for c in calls or [] if isinstance(c, dict)]


def call_ids(message: Mapping[str, Any]) -> list[str]:
    return [str(c.get("id")) for c in tool_calls(message) if c.get("id")]


def call_text(call: Mapping[str, Any]) -> str:
    """One tool call as the model wrote it: ``name(arguments)``."""
    function = call.get("function") or {}
    arguments = function.get("arguments", "")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return f"{function.get('name', '')}({arguments})"


def message_text(message: Mapping[str, Any]) -> str:
    """Everything of a message the model reads as text: content, then each tool call."""
    parts = [content_text(message.get("content"))]
    parts.extend(call_text(call) for call in tool_calls(message))
    return "\n".join(p for p in parts if p)


def leading_system(messages: Sequence[Mapping[str, Any]]) -> int:
    """How many system messages open ``messages``: they stay in place through compaction."""
    count = 0
    while count < len(messages) and messages[count].get("role") == "system":
        count += 1
    return count


def cut_points(messages: Sequence[Mapping[str, Any]]) -> list[bool]:
    """``ok[i]``: the list may be cut just before message ``i`` (``0 < i < len``).

    Not before a tool message, and not while a call made before ``i`` is still answered at or
    after ``i``: a kept part must never start with a tool result whose call was cut away.
    """
    answered_at: dict[str, int] = {}
    for index, message in enumerate(messages):
        if message.get("role") == "tool" and message.get("tool_call_id"):
            answered_at[str(message["tool_call_id"])] = index
    ok = [False] * (len(messages) + 1)
    open_until = -1  # the last index still answering a call made so far
    for index, message in enumerate(messages):
        if index > 0:
            ok[index] = message.get("role") != "tool" and open_until < index
        for ident in call_ids(message):
            open_until = max(open_until, answered_at.get(ident, -1))
    return ok


def orphan_results(messages: Sequence[Mapping[str, Any]]) -> list[int]:
    """Indexes of tool messages whose call id no earlier assistant message made."""
    made: set[str] = set()
    orphans: list[int] = []
    for index, message in enumerate(messages):
        made.update(call_ids(message))
        if message.get("role") == "tool" and str(message.get("tool_call_id")) not in made:
            orphans.append(index)
    return orphans
