"""A scripted Anthropic Messages API on 127.0.0.1, for driving a real agent host offline.

The script has two steps per turn (a turn starts at the last user message that is not a tool
result, so a resumed session is scripted afresh). A request that offers the search tool and
carries no ``tool_result`` in this turn yet gets a ``tool_use`` calling it; a request that carries
the tool's result gets a text answer quoting that result. Any other model call the host makes on the side (a title,
a quota probe, a summary; those offer no such tool) gets a short plain text. Answers stream as
server-sent events when the request asks for ``stream: true`` and are one JSON message otherwise;
``count_tokens`` and any other path get a valid small answer. Every request is recorded.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from tests.integrations.scripted_http import (
    BaseScript,
    Recorded,
    ScriptedServer,
    Stream,
    event,
    recalled,
    text_of,
)

__all__ = ["Script", "ScriptedServer"]

MODEL = "claude-scripted"
SIDE_ANSWER = "ok"


@dataclass
class Script(BaseScript):
    """What the model does: call ``tool`` with ``arguments``, then answer with ``answer_prefix``
    followed by the text of the tool's result."""

    def messages_requests(self) -> list[dict[str, Any]]:
        return [r.body for r in self.requests if r.path.startswith("/v1/messages") and _is_main(r)]

    def tool_results(self) -> list[str]:
        """The text of every ``tool_result`` the host sent back for the scripted call."""
        found: list[str] = []
        for body in self.messages_requests():
            for block in _blocks(body, turn_only=True):
                if _is_scripted(block):
                    found.append(text_of(block.get("content")))
        return found

    def respond(self, method: str, path: str, body: Any) -> Any | Stream:
        if method == "GET":
            if path.startswith("/v1/models"):
                return {"data": [{"id": MODEL, "type": "model"}], "has_more": False}
            return {}
        if path.endswith("/count_tokens"):
            return {"input_tokens": 10}
        if method != "POST" or path != "/v1/messages" or not isinstance(body, dict):
            return {}
        blocks, stop = _reply(self, body)
        model = body.get("model") or MODEL
        if not body.get("stream"):
            return _message(blocks, stop, model)
        return Stream([event(e, e["type"]) for e in _events(blocks, stop, model)])


TOOL_USE_PREFIX = "toolu_scripted_"
"""Each turn's call gets its own id (the prefix and the turn's message index): Claude Code
resends earlier turns on resume, and ids repeated across turns would be ambiguous."""


def _is_scripted(block: dict[str, Any]) -> bool:
    return block.get("type") == "tool_result" and str(block.get("tool_use_id", "")).startswith(
        TOOL_USE_PREFIX
    )


def _is_main(r: Recorded) -> bool:
    return isinstance(r.body, dict) and "count_tokens" not in r.path


def _blocks(body: dict[str, Any], turn_only: bool = False) -> list[dict[str, Any]]:
    """The content blocks of the request's messages; ``turn_only``: of the current turn."""
    messages = body.get("messages") or []
    if turn_only:
        messages = messages[_turn_start(messages) :]
    blocks: list[dict[str, Any]] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            blocks.extend(b for b in content if isinstance(b, dict))
    return blocks


def _turn_start(messages: list[Any]) -> int:
    """The index of the last user message that carries no tool result (the turn's prompt)."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = message.get("content")
        parts = content if isinstance(content, list) else []
        if not any(isinstance(p, dict) and p.get("type") == "tool_result" for p in parts):
            return index
    return 0


def _reply(script: Script, body: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    """The content blocks and stop reason for one messages request."""
    results = [b for b in _blocks(body, turn_only=True) if _is_scripted(b)]
    if results:
        text = script.answer_prefix + recalled(text_of(results[-1].get("content")))
        return [{"type": "text", "text": text}], "end_turn"
    offered = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
    if script.tool in offered:
        block = {
            "type": "tool_use",
            "id": f"{TOOL_USE_PREFIX}{_turn_start(body.get('messages') or []):04d}",
            "name": script.tool,
            "input": script.arguments,
        }
        return [block], "tool_use"
    return [{"type": "text", "text": SIDE_ANSWER}], "end_turn"


def _message(blocks: list[dict[str, Any]], stop: str, model: str) -> dict[str, Any]:
    return {
        "id": f"msg_scripted_{uuid.uuid4().hex[:16]}",  # Claude Code joins blocks by message id
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 10},
    }


def _events(blocks: list[dict[str, Any]], stop: str, model: str) -> list[dict[str, Any]]:
    start = _message([], None, model)  # type: ignore[arg-type]
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            opened, delta = (
                {"type": "text", "text": ""},
                {"type": "text_delta", "text": block["text"]},
            )
        else:
            opened = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [
            {"type": "content_block_start", "index": index, "content_block": opened},
            {"type": "content_block_delta", "index": index, "delta": delta},
            {"type": "content_block_stop", "index": index},
        ]
    events += [
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": 10},
        },
        {"type": "message_stop"},
    ]
    return events
