"""Hermes' conversation as the turns reme's ``auto_memory`` takes.

Hermes hands ``sync_turn`` the whole OpenAI-style message list of the session so far. Every call
sends all of its user and assistant text turns, each with an id that stays the same on the next
call (its position among the text turns and a hash of its text): ``auto_memory`` merges by id, so
a resend adds only the turns it has not saved, and a turn whose first send failed goes with the
next one. Tool calls and tool results stay out (the answer that used them is kept), and so does
any recalled ``<memory-context>`` block, so memory is not saved back into memory.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import Any

SESSION_PREFIX = "hermes-"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]")
_CONTEXT = re.compile(r"<\s*memory-context\s*>[\s\S]*?<\s*/\s*memory-context\s*>", re.IGNORECASE)
ROLES = ("user", "assistant")


def reme_session_id(hermes_session_id: str) -> str:
    """The reme session (``sessions/<id>.jsonl``) of a Hermes session: ``hermes-<id>``, with
    anything a file name cannot hold replaced, at most 128 characters."""
    cleaned = _UNSAFE.sub("-", hermes_session_id.strip()) or "session"
    return (SESSION_PREFIX + cleaned)[:128]


def text_of(content: Any) -> str:
    """A message's text: a string, or the text parts of a list (images and the like left out)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") if isinstance(p, dict) else p for p in content]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""


def turns_from(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, str]]:
    """``[{id, role, content}]`` for every user and assistant message with text."""
    out: list[dict[str, str]] = []
    for message in messages:
        if not isinstance(message, Mapping) or message.get("role") not in ROLES:
            continue
        text = _CONTEXT.sub("", text_of(message.get("content"))).strip()
        if not text:
            continue  # an assistant message that only calls tools
        role = str(message["role"])
        digest = hashlib.sha256(f"{role}\0{text}".encode()).hexdigest()[:16]
        out.append({"id": f"{len(out) + 1}-{digest}", "role": role, "content": text})
    return out
