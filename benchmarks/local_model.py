"""A deterministic local "model" behind a real OpenAI-compatible HTTP endpoint, for benchmarks.

It answers ``/v1/chat/completions`` on 127.0.0.1 so the pipelines run exactly as against Ollama
or vLLM (the ``openai`` llm plugin, instructor, JSON-schema mode, retries), without a GPU or a
download. Answers are built from the request's JSON schema and filled with sentences taken from
the prompt (an extractive summariser), so their size is that of a plausible answer; ``policy``
hooks let a benchmark act as an agent for tool-loop runs.

Reported usage is what a tokenizer-free estimate (``estimate_tokens``) gives for the whole
request (messages plus schema) and the answer, the same estimate the core uses elsewhere.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from reme_core.components import estimate_tokens

Policy = Callable[[dict[str, Any], dict[str, Any]], dict[str, Any] | None]
"""``policy(request_body, schema) -> answer object``, or None to fall back to schema filling."""

_SENTENCE = re.compile(r"[^.!?\n]{20,200}[.!?]")


class LocalModel:
    """``with LocalModel() as model: model.url`` is an OpenAI-compatible base URL."""

    def __init__(self, policy: Policy | None = None, sentences_per_list: int = 3):
        self.policy = policy
        self.sentences_per_list = sentences_per_list
        self.requests = 0
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                reply = model.reply(body)
                payload = json.dumps(reply).encode()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> LocalModel:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        self.requests += 1
        messages = body.get("messages", [])
        schema = _schema_of(body)
        if schema is None:
            content = " ".join(_sentences(_text(messages))[:3]) or "ok"
        else:
            answer = self.policy(body, schema) if self.policy else None
            if answer is None:
                answer = _fill(schema, schema, _sentences(_user_text(messages)), self)
            content = json.dumps(answer, ensure_ascii=False)
        prompt = json.dumps(messages, ensure_ascii=False) + json.dumps(schema or {})
        return {
            "id": f"local-{self.requests}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "local"),
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": content},
                }
            ],
            "usage": {
                "prompt_tokens": estimate_tokens(prompt),
                "completion_tokens": estimate_tokens(content),
                "total_tokens": estimate_tokens(prompt) + estimate_tokens(content),
            },
        }


def _schema_of(body: dict[str, Any]) -> dict[str, Any] | None:
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return fmt.get("json_schema", {}).get("schema")
    return None


def _text(messages: list[dict[str, Any]]) -> str:
    return "\n".join(str(m.get("content") or "") for m in messages)


def _user_text(messages: list[dict[str, Any]]) -> str:
    return "\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "user")


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.findall(text)]


def _fill(node: dict[str, Any], root: dict[str, Any], pool: list[str], model: LocalModel) -> Any:
    """A valid instance of ``node``: required and optional properties, lists of a few items,
    strings drawn in turn from ``pool`` (so answers quote the prompt, as a summariser would)."""
    if "$ref" in node:
        return _fill(_resolve(node["$ref"], root), root, pool, model)
    for key in ("anyOf", "oneOf"):
        if key in node:  # prefer a non-null branch
            options = [o for o in node[key] if o.get("type") != "null"] or node[key]
            return _fill(options[0], root, pool, model)
    if "allOf" in node:
        return _fill(node["allOf"][0], root, pool, model)
    if "enum" in node:
        return node["enum"][0]
    if "const" in node:
        return node["const"]
    kind = node.get("type")
    if kind == "object" or "properties" in node:
        return {
            name: _fill(sub, root, pool, model) for name, sub in node.get("properties", {}).items()
        }
    if kind == "array":
        count = max(node.get("minItems", 0), min(model.sentences_per_list, len(pool) or 1))
        if "maxItems" in node:
            count = min(count, node["maxItems"])
        return [_fill(node.get("items", {}), root, pool, model) for _ in range(count)]
    if kind == "boolean":
        return False
    if kind == "integer":
        return max(int(node.get("minimum", 1)), 1)
    if kind == "number":
        return float(node.get("minimum", 0))
    text = pool.pop(0) if pool else "nothing further"
    if "maxLength" in node:
        text = text[: node["maxLength"]]
    return text


def _resolve(ref: str, root: dict[str, Any]) -> dict[str, Any]:
    node: Any = root
    for part in ref.removeprefix("#/").split("/"):
        node = node[part]
    return node
