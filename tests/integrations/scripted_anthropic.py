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
import threading
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "claude-scripted"
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
    """What the model does: call ``tool`` with ``arguments``, then answer with ``answer_prefix``
    followed by the text of the tool's result."""

    tool: str
    arguments: dict[str, Any]
    answer_prefix: str = "From the workspace: "
    requests: list[Recorded] = field(default_factory=list)

    def messages_requests(self) -> list[dict[str, Any]]:
        return [r.body for r in self.requests if r.path.startswith("/v1/messages") and _is_main(r)]

    def tool_results(self) -> list[str]:
        """The text of every ``tool_result`` the host sent back for the scripted call."""
        found: list[str] = []
        for body in self.messages_requests():
            for block in _blocks(body, turn_only=True):
                if _is_scripted(block):
                    found.append(_text_of(block.get("content")))
        return found


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


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_text_of(c.get("text", c.get("content"))) for c in content if c)
    return "" if content is None else str(content)


def _recalled(result: str) -> str:
    """The hit texts of a reme search result (JSON), else the result as it came."""
    try:
        hits = json.loads(result.split("\n\n<system-reminder>", 1)[0]).get("hits")
    except (ValueError, AttributeError):
        return result
    if not isinstance(hits, list) or not hits:
        return result
    return " ".join(str(h.get("text", "")).replace("\n", " ") for h in hits if isinstance(h, dict))


def _reply(script: Script, body: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    """The content blocks and stop reason for one messages request."""
    results = [b for b in _blocks(body, turn_only=True) if _is_scripted(b)]
    if results:
        text = script.answer_prefix + _recalled(_text_of(results[-1].get("content")))
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
            if self.path.startswith("/v1/models"):
                self._json({"data": [{"id": MODEL, "type": "model"}], "has_more": False})
            else:
                self._json({})

        def do_HEAD(self) -> None:
            self._record()
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self) -> None:
            body = self._record()
            path = self.path.split("?", 1)[0]
            if path.endswith("/count_tokens"):
                self._json({"input_tokens": 10})
                return
            if path != "/v1/messages" or not isinstance(body, dict):
                self._json({})
                return
            blocks, stop = _reply(script, body)
            model = body.get("model") or MODEL
            if not body.get("stream"):
                self._json(_message(blocks, stop, model))
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            for event in _events(blocks, stop, model):
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
