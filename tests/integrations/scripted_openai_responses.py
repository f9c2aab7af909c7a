"""A scripted OpenAI Responses API on 127.0.0.1, for driving the real ``codex`` offline.

The script has two steps. A ``POST /v1/responses`` whose ``tools`` offer the search tool and whose
``input`` carries no ``function_call_output`` for the scripted call yet gets a ``function_call``
output item calling it; a request that carries that output gets a message quoting it. Any other
model call (one that offers no such tool) gets a short plain text. Answers stream as server-sent
events (``response.created``, ``response.output_item.added``/``done``,
``response.output_text.delta``, ``response.completed``) when the request asks for
``stream: true`` and are one JSON response otherwise; ``GET /v1/models`` and any other path get a
valid small answer. Every request is recorded, so a test can show what the host sent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tests.integrations.scripted_http import (
    BaseScript,
    ScriptedServer,
    Stream,
    event,
    recalled,
    text_of,
    union,
)

__all__ = ["Script", "ScriptedServer", "offered", "text_of", "tool_name"]

MODEL = "gpt-scripted"
SIDE_ANSWER = "ok"
CALL_ID = "call_scripted_0001"


@dataclass
class Script(BaseScript):
    """What the model does: call ``tool`` with ``arguments``, then answer with ``answer_prefix``
    followed by the text of the tool's output."""

    namespace: str | None = None
    """Where the host groups the tool (codex offers an MCP server's tools as one ``namespace``
    tool, ``mcp__<server>``); the call then names both."""

    def responses_requests(self) -> list[dict[str, Any]]:
        return self.bodies("/responses")

    def offered_tools(self) -> list[str]:
        """Every tool name the host offered, over all its requests (for failure messages)."""
        return union(offered(body) for body in self.responses_requests())

    def tool_outputs(self) -> list[str]:
        """The text of every ``function_call_output`` the host sent back for the scripted call."""
        return [
            text_of(item.get("output"))
            for body in self.responses_requests()
            for item in _items(body)
            if item.get("type") == "function_call_output" and item.get("call_id") == CALL_ID
        ]

    def respond(self, method: str, path: str, body: Any) -> Any | Stream:
        if method == "GET":
            if path.endswith("/models"):
                return {"object": "list", "data": [{"id": MODEL, "object": "model"}]}
            return {}
        if not path.endswith("/responses") or not isinstance(body, dict):
            return {}
        item = _output(self, body)
        model = body.get("model") or MODEL
        if not body.get("stream"):
            return _response([item], model, "completed")
        return Stream([event(e, e["type"]) for e in _events(item, model)])


def tool_name(tool: Any) -> str | None:
    """A Responses tool's name: flat (``{"type": "function", "name": ...}``) or nested."""
    if not isinstance(tool, dict):
        return None
    name = tool.get("name") or (tool.get("function") or {}).get("name")
    return name if isinstance(name, str) else None


def offered(body: dict[str, Any]) -> list[str]:
    """The tool names a request offers; a namespace's tools as ``<namespace>/<tool>``."""
    names: list[str] = []
    for tool in body.get("tools") or []:
        name = tool_name(tool)
        if name and tool.get("type") == "namespace":
            names += [f"{name}/{n}" for n in map(tool_name, tool.get("tools") or []) if n]
        elif name:
            names.append(name)
    return names


def _items(body: dict[str, Any]) -> list[dict[str, Any]]:
    items = body.get("input")
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def _output(script: Script, body: dict[str, Any]) -> dict[str, Any]:
    """The one output item for a responses request."""
    outputs = [
        i
        for i in _items(body)
        if i.get("type") == "function_call_output" and i.get("call_id") == CALL_ID
    ]
    if outputs:
        return _message(script.answer_prefix + recalled(text_of(outputs[-1].get("output"))))
    wanted = f"{script.namespace}/{script.tool}" if script.namespace else script.tool
    if wanted in offered(body):
        call = {
            "type": "function_call",
            "id": "fc_scripted_0001",
            "call_id": CALL_ID,
            "name": script.tool,
            "arguments": json.dumps(script.arguments),
            "status": "completed",
        }
        return {**call, "namespace": script.namespace} if script.namespace else call
    return _message(SIDE_ANSWER)


def _message(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": "msg_scripted_0001",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def _response(output: list[dict[str, Any]], model: str, status: str) -> dict[str, Any]:
    return {
        "id": "resp_scripted",
        "object": "response",
        "created_at": 0,
        "model": model,
        "status": status,
        "output": output,
        "usage": {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 10,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 20,
        },
    }


def _events(item: dict[str, Any], model: str) -> list[dict[str, Any]]:
    opened = {**item, "status": "in_progress"}
    if item["type"] == "message":
        opened["content"] = []
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": _response([], model, "in_progress")},
        {"type": "response.in_progress", "response": _response([], model, "in_progress")},
        {"type": "response.output_item.added", "output_index": 0, "item": opened},
    ]
    if item["type"] == "message":
        text = item["content"][0]["text"]
        part = {"type": "output_text", "text": "", "annotations": []}
        where = {"item_id": item["id"], "output_index": 0, "content_index": 0}
        events += [
            {"type": "response.content_part.added", **where, "part": part},
            {"type": "response.output_text.delta", **where, "delta": text},
            {"type": "response.output_text.done", **where, "text": text},
            {"type": "response.content_part.done", **where, "part": item["content"][0]},
        ]
    else:
        events.append(
            {
                "type": "response.function_call_arguments.done",
                "item_id": item["id"],
                "output_index": 0,
                "arguments": item["arguments"],
            }
        )
    events += [
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": _response([item], model, "completed")},
    ]
    return events
