"""AgentScope messages as the chat dicts reme's context API takes, and the way back.

AgentScope 2.x keeps one reply as one assistant ``Msg`` whose blocks interleave text, tool calls
and tool results (``Agent._save_to_context``). reme's ``reme_core.light`` works on OpenAI-style
dicts, so a ``Msg`` becomes a *group* of dicts: an assistant message per run of text and calls,
and a ``tool`` message per result. Compaction may then only cut between groups, which is what
``Flattened.split`` does; tool-output cuts are written back into the very blocks they came from.

Plain dicts (``{"role", "content", ...}``) pass through unchanged, one group each, so callers that
already hold OpenAI-style messages use the same manager.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agentscope.message import (
    DataBlock,
    HintBlock,
    Msg,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
)


class MessageError(TypeError):
    """Something given as a message that is neither an AgentScope ``Msg`` nor a chat dict."""


@dataclass
class Flattened:
    """``messages`` as chat dicts: ``groups[i]`` is the slice of ``dicts`` message ``i`` became,
    ``results[j]`` the ``(message, block)`` a ``tool`` dict ``j`` came from (None for dicts)."""

    messages: list[Any]
    dicts: list[dict[str, Any]] = field(default_factory=list)
    groups: list[tuple[int, int]] = field(default_factory=list)
    results: dict[int, tuple[int, int]] = field(default_factory=dict)

    def split(self, compacted: int, pinned: int) -> tuple[list[Any], list[Any]]:
        """The original messages cut where reme cut the dicts: the first ``compacted`` dicts after
        the ``pinned`` leading system ones. A message only partly inside stays whole on the kept
        side (so does everything after it): keeping more never breaks a tool call and its
        result apart."""
        end = pinned + compacted
        taken = [
            i
            for i, (start, stop) in enumerate(self.groups)
            if start >= pinned and stop <= end and stop > start
        ]
        # Only a prefix of the non-system messages may go: stop at the first gap.
        first = next((i for i, (start, _) in enumerate(self.groups) if start >= pinned), 0)
        prefix: list[int] = []
        for expected, index in enumerate(taken, start=first):
            if index != expected:
                break
            prefix.append(index)
        chosen = set(prefix)
        to_compact = [m for i, m in enumerate(self.messages) if i in chosen]
        to_keep = [m for i, m in enumerate(self.messages) if i not in chosen]
        return to_compact, to_keep


def flatten(messages: Sequence[Any]) -> Flattened:
    """Chat dicts for a list of ``Msg`` objects and/or chat dicts (MessageError otherwise)."""
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise MessageError(
            f"messages must be a list of agentscope Msg objects, not {type(messages).__name__}"
        )
    out = Flattened(list(messages))
    for index, message in enumerate(out.messages):
        start = len(out.dicts)
        if isinstance(message, Msg):
            for block_index, item in _msg_dicts(message):
                if block_index is not None:
                    out.results[len(out.dicts)] = (index, block_index)
                out.dicts.append(item)
        elif isinstance(message, dict):
            out.dicts.append(dict(message))
        else:
            raise MessageError(
                f"messages[{index}] must be an agentscope Msg or a chat dict, "
                f"not {type(message).__name__}"
            )
        out.groups.append((start, len(out.dicts)))
    return out


def _msg_dicts(msg: Msg) -> list[tuple[int | None, dict[str, Any]]]:
    """One ``Msg`` as chat dicts, each with the index of the tool-result block it came from."""
    stamp = {"timestamp": msg.created_at} if msg.created_at else {}
    out: list[tuple[int | None, dict[str, Any]]] = []
    texts: list[str] = []
    parts: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []

    def flush() -> None:
        if texts or parts or calls:
            item: dict[str, Any] = {"role": msg.role, "content": _content(texts, parts), **stamp}
            if calls:
                item["tool_calls"] = list(calls)
            out.append((None, item))
        texts.clear()
        parts.clear()
        calls.clear()

    for block_index, block in enumerate(msg.content or []):
        if isinstance(block, TextBlock):
            texts.append(block.text)
        elif isinstance(block, ThinkingBlock):
            texts.append(block.thinking)
        elif isinstance(block, HintBlock):
            texts.append(block_text(block.hint))
        elif isinstance(block, DataBlock):
            parts.append({"type": "data", "name": block.name or ""})
        elif isinstance(block, ToolCallBlock):
            # A call joins the text before it, as one assistant turn.
            calls.append(
                {
                    "id": block.id,
                    "type": "function",
                    "function": {"name": block.name, "arguments": block.input or ""},
                }
            )
        elif isinstance(block, ToolResultBlock):
            flush()
            out.append(
                (
                    block_index,
                    {
                        "role": "tool",
                        "tool_call_id": block.id,
                        "name": block.name,
                        "content": block_text(block.output),
                        **stamp,
                    },
                )
            )
    flush()
    if not out:
        out.append((None, {"role": msg.role, "content": "", **stamp}))
    # The first dict carries the message's id, so a saved transcript names where it came from.
    out[0][1]["id"] = msg.id
    return out


def _content(texts: list[str], parts: list[dict[str, Any]]) -> str | list[Any]:
    text = "\n".join(t for t in texts if t)
    if not parts:
        return text
    return [{"type": "text", "text": text}, *parts] if text else list(parts)


def block_text(value: Any) -> str:
    """The text of a tool output or hint: a string, or the text of its blocks."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(block_text(v) for v in value if not isinstance(v, DataBlock))
    if isinstance(value, TextBlock):
        return value.text
    return json.dumps(value, default=str) if value is not None else ""


def write_back_results(flat: Flattened, compacted: list[dict[str, Any]]) -> int:
    """Put the cut tool outputs of ``compacted`` (reme's copy of ``flat.dicts``) into the blocks
    they came from, in place, as ReMeLight does; chat dicts are replaced in ``flat.messages``.
    Returns how many outputs changed."""
    changed = 0
    for position, item in enumerate(compacted):
        before = flat.dicts[position]
        if item.get("content") == before.get("content"):
            continue
        origin = flat.results.get(position)
        if origin is not None:
            message_index, block_index = origin
            block = flat.messages[message_index].content[block_index]
            block.output = str(item.get("content") or "")
            changed += 1
        elif not isinstance(flat.messages[_group_of(flat, position)], Msg):
            flat.messages[_group_of(flat, position)] = dict(item)
            changed += 1
    return changed


def _group_of(flat: Flattened, position: int) -> int:
    return next(i for i, (start, stop) in enumerate(flat.groups) if start <= position < stop)


def to_msg(message: Any, name: str = "user") -> Msg:
    """A chat dict as an AgentScope ``Msg`` (a ``Msg`` stays as it is)."""
    if isinstance(message, Msg):
        return message
    if not isinstance(message, dict):
        raise MessageError(f"not a message: {type(message).__name__}")
    role = message.get("role")
    text = message.get("content")
    if isinstance(text, list):
        text = "\n".join(str(p.get("text", "")) for p in text if isinstance(p, dict))
    if role not in {"user", "assistant", "system"}:
        role, text = "assistant", f"[{role}] {text or ''}"
    return Msg(name=name, role=role, content=[TextBlock(text=str(text or ""))])


def without_hints(messages: Sequence[Any]) -> list[Any]:
    """Copies without the agent's own hint blocks (time and context reminders it injects for
    the model), which are not part of the conversation to remember; chat dicts as they are."""
    return [
        m.model_copy(update={"content": [b for b in m.content if not isinstance(b, HintBlock)]})
        if isinstance(m, Msg)
        else m
        for m in messages
    ]


def transcript(dicts: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat dicts as auto_memory's turns (``{role, content}`` text): tool calls and results
    written into the text, empty turns left out."""
    out: list[dict[str, Any]] = []
    for item in dicts:
        role = item.get("role")
        text = _text(item.get("content"))
        if role == "tool":
            text = f"[tool result {item.get('name') or item.get('tool_call_id', '')}]\n{text}"
            role = "assistant"
        for call in item.get("tool_calls") or []:
            function = call.get("function") or {}
            text += f"\n{function.get('name', '')}({function.get('arguments', '')})"
        if text.strip() and role in {"user", "assistant", "system"}:
            out.append({"role": role, "content": text.strip()})
    return out


def turns(flat: Flattened) -> list[dict[str, Any]]:
    """``transcript`` of ``flat`` with each turn's ``id``: the message's id for its first dict,
    ``<id>.<n>`` for the n-th after it (tool results, text after a call), so a message said twice
    is two turns in reme and one sent again is still one. Chat dicts keep an ``id`` they have."""
    out: list[dict[str, Any]] = []
    for message, (start, stop) in zip(flat.messages, flat.groups, strict=True):
        for offset, item in enumerate(flat.dicts[start:stop]):
            for turn in transcript([item]):
                if isinstance(message, Msg) and message.id:
                    turn["id"] = _id(message.id if offset == 0 else f"{message.id}.{offset}")
                elif isinstance(item.get("id"), str | int) and offset == 0:
                    turn["id"] = _id(str(item["id"]))
                out.append(turn)
    return out


def _id(ident: str) -> str:
    """``ident``, or its sha256 when longer than reme takes (200 characters) or blank."""
    if ident.strip() and len(ident) <= 200:
        return ident
    return hashlib.sha256(ident.encode("utf-8")).hexdigest()


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)
