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
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "gpt-scripted"
SIDE_ANSWER = "ok"
CALL_ID = "call_scripted_0001"
USAGE = {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class Script:
    """Call ``tool`` with ``arguments``, then answer ``answer_prefix`` + the tool's output."""

    tool: str
    arguments: dict[str, Any]
    answer_prefix: str = "From the workspace: "
    requests: list[Recorded] = field(default_factory=list)

    def chat_requests(self) -> list[dict[str, Any]]:
        return [
            r.body
            for r in self.requests
            if r.path.split("?", 1)[0].endswith("/chat/completions") and isinstance(r.body, dict)
        ]

    def offered_tools(self) -> list[str]:
        names: list[str] = []
        for body in self.chat_requests():
            names += [n for n in offered(body) if n not in names]
        return names

    def tool_outputs(self) -> list[str]:
        """The text of every ``tool`` message the host sent back for the scripted call."""
        return [
            text_of(m.get("content"))
            for body in self.chat_requests()
            for m in body.get("messages") or []
            if isinstance(m, dict) and m.get("role") == "tool" and m.get("tool_call_id") == CALL_ID
        ]


def offered(body: dict[str, Any]) -> list[str]:
    out = []
    for tool in body.get("tools") or []:
        name = (tool.get("function") or {}).get("name") if isinstance(tool, dict) else None
        if isinstance(name, str):
            out.append(name)
    return out


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


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

        def _json(self, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._record()
            self._json({"object": "list", "data": [{"id": MODEL, "object": "model"}]})

        def do_POST(self) -> None:
            body = self._record()
            if not self.path.split("?", 1)[0].endswith("/chat/completions") or not isinstance(
                body, dict
            ):
                self._json({})
                return
            message, finish = _message(script, body)
            model = body.get("model") or MODEL
            if not body.get("stream"):
                self._json(_completion(message, finish, model))
                return
            usage = bool((body.get("stream_options") or {}).get("include_usage"))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            for item in _chunks(message, finish, model, usage):
                self.wfile.write(f"data: {json.dumps(item)}\n\n".encode())
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
