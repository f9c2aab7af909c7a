"""Builders of OpenAI-style messages for the context API tests."""

from __future__ import annotations

from typing import Any


def user(text: str, **extra: Any) -> dict[str, Any]:
    return {"role": "user", "content": text, **extra}


def assistant(
    text: str | None = None, calls: list[tuple[str, str]] | None = None
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [
            {"id": ident, "type": "function", "function": {"name": name, "arguments": "{}"}}
            for ident, name in calls
        ]
    return message


def tool(ident: str, text: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": ident, "content": text}
