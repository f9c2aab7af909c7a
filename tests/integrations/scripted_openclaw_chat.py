"""A scripted OpenAI Chat Completions API on 127.0.0.1, for driving a real agent host offline.

The script has two steps, per user turn. A ``POST /v1/chat/completions`` whose ``tools`` offer
the search tool gets a ``tool_calls`` answer calling it, unless its last message other than user
messages is a tool result: then it gets a text answer quoting that result. So a second session of the same conversation calls the tool again for its new
question. The match is by position, not by call id: hosts rewrite ids (OpenClaw strips
punctuation and renumbers them). Any other model call (one that offers no such tool) gets a short
plain text. Answers stream as ``chat.completion.chunk`` server-sent events ending in
``data: [DONE]`` (always with a usage chunk) when the request asks for ``stream: true`` and are
one JSON completion otherwise; ``GET /v1/models`` and any other path get a valid small answer.
Every request is recorded. The wire format is ``scripted_openai_chat``'s; only the matching
differs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from tests.integrations import scripted_openai_chat as chat
from tests.integrations.scripted_http import ScriptedServer, Stream, recalled, text_of, union
from tests.integrations.scripted_openai_chat import MODEL, SIDE_ANSWER, answer, offered

__all__ = ["Script", "ScriptedServer"]


@dataclass
class Script(chat.Script):
    """What the model does on each user turn: call ``tool`` with ``arguments``, then answer with
    ``answer_prefix`` followed by the text of the tool's output (matched by position)."""

    answers: list[str] = field(default_factory=list)
    """Every text answer the script gave, in order."""

    def completions(self) -> list[dict[str, Any]]:
        return self.chat_requests()

    def tool_outputs(self) -> list[str]:
        """The text of every tool result the host sent back, over all its requests, once each."""
        return union(
            [text_of(m.get("content")) for m in _messages(body) if m.get("role") == "tool"]
            for body in self.completions()
        )

    def respond(self, method: str, path: str, body: Any) -> Any | Stream:
        if method == "GET":
            if path.endswith("/models"):
                return {"object": "list", "data": [{"id": MODEL, "object": "model"}]}
            return {}
        if not path.endswith("/chat/completions") or not isinstance(body, dict):
            return {}
        message = _reply(self, body)
        return answer(body, message, "tool_calls" if message.get("tool_calls") else "stop", True)


def _messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    items = body.get("messages")
    return [m for m in items if isinstance(m, dict)] if isinstance(items, list) else []


def _answers_tool(body: dict[str, Any]) -> dict[str, Any] | None:
    """The tool result to answer from: the last message that is not a user message, when it is
    a tool result. Hosts may append user-role context after the results (OpenClaw does), and a
    new question after a finished answer starts a new turn."""
    for message in reversed(_messages(body)):
        if message.get("role") != "user":
            return message if message.get("role") == "tool" else None
    return None


def _reply(script: Script, body: dict[str, Any]) -> dict[str, Any]:
    """The assistant message for one request: a tool call or a text."""
    result = _answers_tool(body)
    if result is not None:
        text = script.answer_prefix + recalled(text_of(result.get("content")))
        script.answers.append(text)
        return {"role": "assistant", "content": text}
    if script.tool in offered(body):
        number = len(script.requests)
        call = {
            "id": f"call{number:04d}",
            "type": "function",
            "function": {"name": script.tool, "arguments": json.dumps(script.arguments)},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    return {"role": "assistant", "content": SIDE_ANSWER}
