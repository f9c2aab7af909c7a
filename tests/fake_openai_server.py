"""A scripted OpenAI-compatible server on 127.0.0.1:0, shared by the embedding and chat tests.

``script`` holds one action per coming request, consumed in order (the subclass's default when
empty). Each request is recorded in ``requests`` with its path, JSON body and Authorization.
Subclasses answer one route in ``answer(send, body, action)``.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Send = Callable[..., None]
"""``send(code, text, headers=None)`` writes one HTTP response."""


class ScriptedServer:
    route = "/v1/"
    default_action: tuple[Any, ...] = ("ok",)

    def __init__(self) -> None:
        self.script: list[tuple[Any, ...]] = []
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server._lock:
                    server.requests.append(
                        {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
                    )
                    action = server.script.pop(0) if server.script else server.default_action
                # The client may be gone already (timeout tests).
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    if self.path != server.route:
                        self._send(404, json.dumps({"error": {"message": "no such route"}}))
                    else:
                        server.answer(self._send, body, action)

            def _send(self, code: int, text: str, headers: dict[str, str] | None = None) -> None:
                payload = text.encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    def answer(self, send: Send, body: dict[str, Any], action: tuple[Any, ...]) -> None:
        raise NotImplementedError

    def reset(self) -> None:
        with self._lock:
            self.script.clear()
            self.requests.clear()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
