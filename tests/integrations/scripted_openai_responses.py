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
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "gpt-scripted"
SIDE_ANSWER = "ok"
CALL_ID = "call_scripted_0001"


@dataclass
class Recorded:
    """One request the host made."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class Script:
    """What the model does: call ``tool`` with ``arguments``, then answer with ``answer_prefix``
    followed by the text of the tool's output."""

    tool: str
    arguments: dict[str, Any]
    namespace: str | None = None
    """Where the host groups the tool (codex offers an MCP server's tools as one ``namespace``
    tool, ``mcp__<server>``); the call then names both."""
    answer_prefix: str = "From the workspace: "
    requests: list[Recorded] = field(default_factory=list)

    def responses_requests(self) -> list[dict[str, Any]]:
        return [
            r.body
            for r in self.requests
            if r.path.split("?", 1)[0].endswith("/responses") and isinstance(r.body, dict)
        ]

    def offered_tools(self) -> list[str]:
        """Every tool name the host offered, over all its requests (for failure messages)."""
        names: list[str] = []
        for body in self.responses_requests():
            names += [n for n in offered(body) if n not in names]
        return names

    def tool_outputs(self) -> list[str]:
        """The text of every ``function_call_output`` the host sent back for the scripted call."""
        return [
            text_of(item.get("output"))
            for body in self.responses_requests()
            for item in _items(body)
            if item.get("type") == "function_call_output" and item.get("call_id") == CALL_ID
        ]


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


def text_of(output: Any) -> str:
    """A function_call_output's ``output``: a string, or a list of content parts."""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "\n".join(text_of(p.get("text", p.get("content"))) for p in output if p)
    if isinstance(output, dict):
        return text_of(output.get("content", output.get("text")))
    return "" if output is None else str(output)


def _recalled(result: str) -> str:
    """The hit texts of a reme search result (JSON, maybe wrapped by the host), else the result."""
    # codex prefixes an MCP tool's output with "Wall time: ...\nOutput:\n" before the JSON.
    start = result.find("{")
    try:
        parsed = json.loads(result[start:] if start >= 0 else result)
    except ValueError:
        return result
    hits = parsed.get("hits") if isinstance(parsed, dict) else None
    if not isinstance(hits, list) or not hits:
        return result
    return " ".join(str(h.get("text", "")).replace("\n", " ") for h in hits if isinstance(h, dict))


def _output(script: Script, body: dict[str, Any]) -> dict[str, Any]:
    """The one output item for a responses request."""
    outputs = [
        i
        for i in _items(body)
        if i.get("type") == "function_call_output" and i.get("call_id") == CALL_ID
    ]
    if outputs:
        return _message(script.answer_prefix + _recalled(text_of(outputs[-1].get("output"))))
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
            if not self.path.split("?", 1)[0].endswith("/responses") or not isinstance(body, dict):
                self._json({})
                return
            item = _output(script, body)
            model = body.get("model") or MODEL
            if not body.get("stream"):
                self._json(_response([item], model, "completed"))
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            for event in _events(item, model):
                self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
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
