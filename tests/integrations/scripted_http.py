"""What the scripted model servers share: a threaded HTTP server on 127.0.0.1 that records every
request and answers it with JSON or server-sent events.

A scripted API (``scripted_anthropic``, ``scripted_openai_chat``, ...) is only its wire format
and its script: a ``Script`` holding ``requests`` and a ``respond(method, path, body)`` that
returns a JSON payload or a ``Stream``. ``ScriptedServer(script)`` serves it, one call to
``respond`` at a time (a script may count what it has answered).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol


@dataclass
class Recorded:
    """One request the host made."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class BaseScript:
    """What every script does: call ``tool`` with ``arguments``, then answer with
    ``answer_prefix`` followed by what the tool returned. A subclass adds ``respond``."""

    tool: str
    arguments: dict[str, Any]
    answer_prefix: str = "From the workspace: "
    requests: list[Recorded] = field(default_factory=list)

    def bodies(self, suffix: str) -> list[dict[str, Any]]:
        """The JSON bodies of the requests to a path ending in ``suffix``."""
        return [
            r.body
            for r in self.requests
            if r.path.split("?", 1)[0].endswith(suffix) and isinstance(r.body, dict)
        ]


def union(names: Iterable[list[str]]) -> list[str]:
    """The names of all the lists, each once, in the order first seen."""
    return list(dict.fromkeys(n for group in names for n in group))


@dataclass
class Stream:
    """A ``text/event-stream`` answer: ``events`` are already framed (see ``event``)."""

    events: list[str]


class Scripted(Protocol):
    requests: list[Recorded]

    def respond(self, method: str, path: str, body: Any) -> Any | Stream:
        """The answer to one request (``path`` without its query): a JSON payload or a Stream."""
        ...


def event(payload: Any, name: str | None = None) -> str:
    """One server-sent event carrying ``payload`` (JSON, or a string as it is)."""
    data = payload if isinstance(payload, str) else json.dumps(payload)
    return (f"event: {name}\n" if name else "") + f"data: {data}\n\n"


def text_of(content: Any) -> str:
    """A message's or tool result's content: a string, or (nested) content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(text_of(p) for p in content if p)
    if isinstance(content, dict):
        return text_of(content.get("text", content.get("content")))
    return "" if content is None else str(content)


def recalled(result: str) -> str:
    """The hit texts of a reme search result (the first JSON object in the text, whatever the
    host put around it), else the result as it came."""
    start = result.find("{")
    try:
        parsed = json.JSONDecoder().raw_decode(result, start)[0] if start >= 0 else None
    except ValueError:
        return result
    hits = parsed.get("hits") if isinstance(parsed, dict) else None
    if not isinstance(hits, list) or not hits:
        return result
    return " ".join(str(h.get("text", "")).replace("\n", " ") for h in hits if isinstance(h, dict))


def _handler(script: Scripted) -> type[BaseHTTPRequestHandler]:
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # quiet: the test reads script.requests
            pass

        def _answer(self) -> None:
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
                answer = script.respond(self.command, self.path.split("?", 1)[0], body)
            if self.command == "HEAD":
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif isinstance(answer, Stream):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                for framed in answer.events:
                    self.wfile.write(framed.encode())
                self.wfile.flush()
                self.close_connection = True
            else:
                data = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        do_GET = do_POST = do_HEAD = _answer

    return Handler


class ScriptedServer:
    """``with ScriptedServer(script) as server:`` serves on ``server.url`` in a thread."""

    def __init__(self, script: Scripted) -> None:
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
