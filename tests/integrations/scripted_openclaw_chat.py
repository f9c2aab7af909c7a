"""A scripted OpenAI Chat Completions API on 127.0.0.1, for driving a real agent host offline.

The script has two steps, per user turn. A ``POST /v1/chat/completions`` whose ``tools`` offer
the search tool gets a ``tool_calls`` answer calling it, unless its last message other than user
messages is a tool result: then it gets a text answer quoting that result. So a second session of the same conversation calls the tool again for its new
question. The match is by position, not by call id: hosts rewrite ids (OpenClaw strips
punctuation and renumbers them). Any other model call (one that offers no such tool) gets a short
plain text. Answers stream as ``chat.completion.chunk`` server-sent events ending in
``data: [DONE]`` when the request asks for ``stream: true`` and are one JSON completion otherwise;
``GET /v1/models`` and any other path get a valid small answer. Every request is recorded.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "gpt-scripted"
SIDE_ANSWER = "ok"


@dataclass
class Recorded:
    """One request the host made."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class Script:
    """What the model does on each user turn: call ``tool`` with ``arguments``, then answer with
    ``answer_prefix`` followed by the text of the tool's output."""

    tool: str
    arguments: dict[str, Any]
    answer_prefix: str = "From the workspace: "
    requests: list[Recorded] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)
    """Every text answer the script gave, in order."""

    def completions(self) -> list[dict[str, Any]]:
        return [
            r.body
            for r in self.requests
            if r.path.split("?", 1)[0].endswith("/chat/completions") and isinstance(r.body, dict)
        ]

    def offered_tools(self) -> list[str]:
        names: list[str] = []
        for body in self.completions():
            names += [n for n in offered(body) if n not in names]
        return names

    def tool_outputs(self) -> list[str]:
        """The text of every tool result the host sent back, over all its requests, once each."""
        seen: list[str] = []
        for body in self.completions():
            for message in _messages(body):
                if message.get("role") == "tool":
                    text = text_of(message.get("content"))
                    if text not in seen:
                        seen.append(text)
        return seen


def offered(body: dict[str, Any]) -> list[str]:
    names: list[str] = []
    for tool in body.get("tools") or []:
        if isinstance(tool, dict):
            name = (tool.get("function") or {}).get("name") or tool.get("name")
            if isinstance(name, str):
                names.append(name)
    return names


def _messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    items = body.get("messages")
    return [m for m in items if isinstance(m, dict)] if isinstance(items, list) else []


def text_of(content: Any) -> str:
    """A message's content: a string, or a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(text_of(p.get("text", p.get("content"))) for p in content if p)
    return "" if content is None else str(content)


def _recalled(result: str) -> str:
    """The hit texts of a reme search result (JSON somewhere in the text), else the result."""
    start = result.find("{")
    try:
        parsed = json.loads(result[start:] if start >= 0 else result)
    except ValueError:
        return result
    hits = parsed.get("hits") if isinstance(parsed, dict) else None
    if not isinstance(hits, list) or not hits:
        return result
    return " ".join(str(h.get("text", "")).replace("\n", " ") for h in hits if isinstance(h, dict))


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
        text = script.answer_prefix + _recalled(text_of(result.get("content")))
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


USAGE = {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}


def _completion(message: dict[str, Any], model: str) -> dict[str, Any]:
    finish = "tool_calls" if message.get("tool_calls") else "stop"
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": USAGE,
    }


def _chunks(message: dict[str, Any], model: str) -> list[dict[str, Any]]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-scripted",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    out = [chunk({"role": "assistant", "content": ""})]
    if message.get("tool_calls"):
        calls = [{"index": i, **c} for i, c in enumerate(message["tool_calls"])]
        out += [chunk({"tool_calls": calls}), chunk({}, "tool_calls")]
    else:
        out += [chunk({"content": message["content"]}), chunk({}, "stop")]
    out.append({**chunk({}), "choices": [], "usage": USAGE})
    return out


def _handler(script: Script) -> type[BaseHTTPRequestHandler]:
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # quiet: the test reads script.requests
            pass

        def _record(self) -> Any:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            with lock:
                script.requests.append(
                    Recorded(self.command, self.path, dict(self.headers.items()), body)
                )
            return body

        def _json(self, payload: Any, status: int = 200) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._record()
            if self.path.split("?", 1)[0].endswith("/models"):
                self._json({"object": "list", "data": [{"id": MODEL, "object": "model"}]})
            else:
                self._json({})

        def do_POST(self) -> None:
            body = self._record()
            path = self.path.split("?", 1)[0]
            if not path.endswith("/chat/completions") or not isinstance(body, dict):
                self._json({})
                return
            with lock:
                message = _reply(script, body)
            model = body.get("model") or MODEL
            if not body.get("stream"):
                self._json(_completion(message, model))
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            for event in _chunks(message, model):
                self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
            self.close_connection = True

    return Handler


class ScriptedServer:
    """``with ScriptedServer(script) as server:`` serves on ``server.url`` in a thread."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(script))
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
