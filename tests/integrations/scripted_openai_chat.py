"""A scripted OpenAI Chat Completions API on 127.0.0.1, for driving a real agent offline.

The script has two steps. A ``POST .../chat/completions`` whose ``tools`` offer the scripted tool
and whose ``messages`` hold no ``tool`` answer to the scripted call yet gets an assistant message
calling it; a request that holds that answer gets a message quoting it after ``answer_prefix``.
Any other request gets a short plain text. Answers stream as ``chat.completion.chunk`` server-sent
events ending in ``data: [DONE]`` when the request asks for ``stream: true`` (the usage in a last
chunk when ``stream_options.include_usage``), and are one ``chat.completion`` otherwise. Every
request is recorded, so a test can show what the host sent.
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
    text_of,
    union,
)

__all__ = ["Script", "ScriptedServer", "answer", "offered", "text_of"]

MODEL = "gpt-scripted"
SIDE_ANSWER = "ok"
CALL_ID = "call_scripted_0001"
USAGE = {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}


@dataclass
class Script(BaseScript):
    """Call ``tool`` with ``arguments``, then answer ``answer_prefix`` + the tool's output."""

    def chat_requests(self) -> list[dict[str, Any]]:
        return self.bodies("/chat/completions")

    def offered_tools(self) -> list[str]:
        return union(offered(body) for body in self.chat_requests())

    def tool_outputs(self) -> list[str]:
        """The text of every ``tool`` message the host sent back for the scripted call."""
        return [
            text_of(m.get("content"))
            for body in self.chat_requests()
            for m in body.get("messages") or []
            if isinstance(m, dict) and m.get("role") == "tool" and m.get("tool_call_id") == CALL_ID
        ]

    def respond(self, method: str, path: str, body: Any) -> Any | Stream:
        if method == "GET":
            return {"object": "list", "data": [{"id": MODEL, "object": "model"}]}
        if not path.endswith("/chat/completions") or not isinstance(body, dict):
            return {}
        message, finish = _message(self, body)
        return answer(body, message, finish)


def answer(
    body: dict[str, Any], message: dict[str, Any], finish: str, usage: bool | None = None
) -> dict[str, Any] | Stream:
    """``message`` as the request asks for it: one ``chat.completion``, or chunks ending in
    ``[DONE]`` when it streams, with a usage chunk when ``usage`` (by default when
    ``stream_options.include_usage``)."""
    model = body.get("model") or MODEL
    if not body.get("stream"):
        return _completion(message, finish, model)
    if usage is None:
        usage = bool((body.get("stream_options") or {}).get("include_usage"))
    return Stream([*map(event, _chunks(message, finish, model, usage)), event("[DONE]")])


def offered(body: dict[str, Any]) -> list[str]:
    """The tool names a request offers (``function.name``, or a flat ``name``)."""
    names: list[str] = []
    for tool in body.get("tools") or []:
        if isinstance(tool, dict):
            name = (tool.get("function") or {}).get("name") or tool.get("name")
            if isinstance(name, str):
                names.append(name)
    return names


def _message(script: Script, body: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The assistant message for a request, and its finish reason."""
    answers = [
        m
        for m in body.get("messages") or []
        if isinstance(m, dict) and m.get("role") == "tool" and m.get("tool_call_id") == CALL_ID
    ]
    if answers:
        text = script.answer_prefix + " ".join(text_of(answers[-1].get("content")).split())
        return {"role": "assistant", "content": text}, "stop"
    if script.tool in offered(body):
        call = {
            "id": CALL_ID,
            "type": "function",
            "function": {"name": script.tool, "arguments": json.dumps(script.arguments)},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
    return {"role": "assistant", "content": SIDE_ANSWER}, "stop"


def _completion(message: dict[str, Any], finish: str, model: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": USAGE,
    }


def _chunks(message: dict[str, Any], finish: str, model: str, usage: bool) -> list[dict[str, Any]]:
    def chunk(delta: dict[str, Any], reason: str | None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-scripted",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": reason}],
        }

    out = [chunk({"role": "assistant", "content": ""}, None)]
    if message.get("tool_calls"):
        calls = [{"index": i, **c} for i, c in enumerate(message["tool_calls"])]
        out.append(chunk({"tool_calls": calls}, None))
    else:
        out.append(chunk({"content": message["content"]}, None))
    out.append(chunk({}, finish))
    if usage:
        out.append({**chunk({}, None), "choices": [], "usage": USAGE})
    return out
