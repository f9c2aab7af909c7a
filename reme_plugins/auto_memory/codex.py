"""The ``codex_transcript`` step: a Codex session's new turns, as auto_memory messages.

Codex keeps each session (a "thread") in ``<codex home>/sessions/YYYY/MM/DD/
rollout-<time>-<thread id>.jsonl`` (``archived_sessions/`` once archived), appending one JSON
record per line. Since 0.30 or so a record is an envelope ``{timestamp, type, payload}``:
``session_meta`` (id, cwd, cli_version), ``turn_context``, ``event_msg`` (UI events that repeat
the conversation), ``response_item`` (what the model saw and said: ``message``, ``function_call``,
``reasoning``, ...) and bookkeeping (``world_state``, ``token_usage_record``, ``compacted``).
Older files hold the response items bare (``{"type": "message", "role": ...}``) after a first
line ``{id, timestamp, instructions}``; both are read. Only ``message`` items of role user or
assistant are kept, without the context Codex injects as user text (``# AGENTS.md
instructions``, ``<environment_context>``, ``<user_instructions>``, ...), and tool outputs that
hold images (a turn of role ``tool`` linking them, see session_images). A message's id is a hash
of its line, so a line read twice is saved once.

Reading is incremental and at-least-once, as for Claude Code: the byte cursor advances only over
lines whose turns are already in ``sessions/<id>.jsonl``, and a last line still being written
waits for the next run (its size is reported as ``codex.partial_bytes``). A line this reader does
not know (a record type Codex added later, a message whose content has another shape, a line that
is not JSON) is never silently lost: it is reported under ``codex.unknown_lines`` (a warning in
the log when it is new), its byte offset is remembered in the cursor, and it is read again on
every run until a reader that knows its format saves it; the turns around it are saved as usual.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from reme_core.api import ComponentSettings, NotFoundError, Step, redact
from reme_plugins.auto_memory import session_images
from reme_plugins.auto_memory.cursor import cursor_file, read_state, write_state
from reme_plugins.auto_memory.request import FLUSH_IDLE, flush_param
from reme_plugins.auto_memory.transcript import (
    AutoMemoryError,
    check_session_id,
    load_transcript,
    parse_timestamp,
)

log = logging.getLogger("reme.auto_memory.codex")

ROLLOUT = re.compile(
    r"rollout-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-(?P<id>[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}"
    r"-[0-9a-fA-F]{12})\.jsonl"
)
"""A rollout file's name; the thread id is its last part."""
SKIPPED = frozenset(
    {
        "session_meta",
        "turn_context",
        "event_msg",
        "compacted",
        "world_state",
        "token_usage_record",
    }
)
"""Envelope types that hold no turn of their own (event_msg repeats the response items)."""
BARE_ITEMS = frozenset(
    {
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "web_search_call",
    }
)
"""Response item types of the older format, written without an envelope."""
_TEXT_BLOCKS = ("input_text", "output_text", "text")
MAX_UNKNOWN = 1000
"""Unknown lines remembered per session; past that the oldest are forgotten (and counted)."""
_NOT_JSON: Any = object()
"""What ``parse_line`` returns for a line that is not JSON (``null`` is JSON)."""
_INJECTED = re.compile(r"\s*(?:# AGENTS\.md instructions\b.*|<([a-z_ ]+)>.*</\1>)\s*", re.DOTALL)
"""A text block Codex writes into a user message: instructions, environment, aborted turns."""


class CodexSettings(ComponentSettings):
    codex_home: str | None = None
    """Codex's folder; None = $CODEX_HOME, else ~/.codex."""
    max_read_bytes: int = Field(16 * 1024 * 1024, ge=1024)
    """Bytes read per run; a longer backlog is read over the following runs (a single line
    longer than this, one holding big images, is read whole)."""


def codex_home(setting: str | None = None) -> Path:
    if setting:
        return Path(setting).expanduser()
    env = os.environ.get("CODEX_HOME", "").strip()
    return Path(env).expanduser() if env else Path.home() / ".codex"


def rollouts(root: Path) -> Iterator[tuple[str, Path]]:
    """``(thread id, file)`` for every rollout under ``sessions/`` and ``archived_sessions/``."""
    for folder in ("sessions", "archived_sessions"):
        for path in sorted((root / folder).glob("**/rollout-*.jsonl")):
            found = ROLLOUT.fullmatch(path.name)
            if found and path.is_file():
                yield found["id"], path


def find_rollout(root: Path, session_id: str) -> Path:
    """The rollout of thread ``session_id``; the most recently written when several match."""
    found = [path for sid, path in rollouts(root) if sid.lower() == session_id.lower()]
    if not found:
        raise NotFoundError(
            f"no Codex rollout for session {session_id} in {root}/sessions/ "
            "(set the step's codex_home or CODEX_HOME)"
        )
    return max(found, key=lambda p: (p.stat().st_mtime, str(p)))


def block_text(content: Any) -> str:
    """The text of a message's content: a string, or its text blocks without injected context
    (images and other blocks are left out)."""
    if isinstance(content, str):
        blocks = [content]
    elif isinstance(content, list):
        blocks = [
            b["text"]
            for b in content
            if isinstance(b, dict)
            and b.get("type") in _TEXT_BLOCKS
            and isinstance(b.get("text"), str)
        ]
    else:
        return ""
    kept = [b.strip() for b in blocks if not _INJECTED.fullmatch(b)]
    return "\n\n".join(b for b in kept if b)


def classify(obj: Any) -> tuple[str, dict[str, Any] | None]:
    """``("item", response item)``, ``("skip", None)`` or ``("unknown", None)`` for one line."""
    if not isinstance(obj, dict):
        return "unknown", None
    kind = obj.get("type")
    if "payload" in obj and isinstance(kind, str):
        if kind == "response_item":
            payload = obj["payload"]
            return ("item", payload) if isinstance(payload, dict) else ("unknown", None)
        return ("skip", None) if kind in SKIPPED else ("unknown", None)
    if kind in BARE_ITEMS:
        return "item", obj
    if "type" not in obj and ("instructions" in obj or obj.get("record_type") == "state"):
        return "skip", None  # the older format's first line and its state lines
    return "unknown", None


def to_message(
    obj: Any,
    raw: bytes,
    shelf: session_images.Shelf | None = None,
    calls: dict[str, str] | None = None,
) -> dict[str, Any] | None:
    """One known line as an auto_memory message, or None when it holds no turn. With ``shelf``,
    its inline images are named in the text (``[image: [[resource/...]]]``), and a tool output
    holding images becomes a turn of role ``tool`` naming the call (``calls``: call_id ->
    label) it answers."""
    kind, item = classify(obj)
    if kind != "item" or item is None:
        return None
    turn = f"codex-{hashlib.sha256(raw).hexdigest()[:20]}"
    if item.get("type") in session_images.CODEX_OUTPUTS:
        images = session_images.codex_tool_images(item)
        if shelf is None or not images:
            return None  # a tool's text output is not a turn
        label = (calls or {}).get(str(item.get("call_id")))
        role, text = "tool", session_images.tool_text(label, images, shelf.paths(turn, images))
    elif item.get("type") == "message":
        role = item.get("role")
        if role not in ("user", "assistant"):
            return None  # developer and system messages are Codex's own instructions
        text = block_text(item.get("content"))
        images = session_images.codex_images(item.get("content"))
        if shelf is not None and images:
            text = f"{text}\n{session_images.markers(images, shelf.paths(turn, images))}".strip()
    else:
        return None
    if not text:
        return None
    text, _ = redact(text)  # the messages are step outputs too: no secret in them
    out: dict[str, Any] = {"id": turn, "role": role, "content": text}
    try:
        stamp = parse_timestamp(obj.get("timestamp"), dt.UTC, "timestamp")  # Codex: UTC
    except AutoMemoryError:
        stamp = None  # a line with a bad time still counts; it takes its neighbour's day
    if stamp is not None:
        out["timestamp"] = stamp.isoformat()
    return out


def describe(obj: Any) -> str:
    """What an unknown record looks like, for the warning (no content: it may hold secrets)."""
    if not isinstance(obj, dict):
        return f"a JSON {type(obj).__name__}, not an object"
    keys = ", ".join(sorted(map(str, obj))[:8])
    kind = obj.get("type")
    return f"type {kind!r} (keys: {keys})" if kind is not None else f"no type (keys: {keys})"


def session_cwd(obj: Any) -> str | None:
    if isinstance(obj, dict) and obj.get("type") in ("session_meta", "turn_context"):
        payload = obj.get("payload")
        if isinstance(payload, dict) and isinstance(payload.get("cwd"), str):
            return payload["cwd"]
    return None


def unknown_reason(obj: Any) -> str | None:
    """Why a complete line is one this reader does not know (None: it knows it, whether or not
    it holds a turn). Only the shape is described: the content may hold secrets."""
    if obj is _NOT_JSON:
        return "not JSON"
    kind, item = classify(obj)
    if kind == "unknown":
        return describe(obj)
    if item is not None and item.get("type") == "message":
        content = item.get("content")
        if not isinstance(content, str | list):
            return f"a message whose content is a JSON {type(content).__name__}"
    return None


def parse_line(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return _NOT_JSON


def _offsets(remembered: Any) -> list[int]:
    """The byte offsets of the unknown lines a cursor remembers (``[[offset, reason], ...]``);
    a hand-edited entry that is not one is ignored."""
    if not isinstance(remembered, list):
        return []
    found = {
        item[0]
        for item in remembered
        if isinstance(item, list) and item and isinstance(item[0], int) and item[0] >= 0
    }
    return sorted(found)


class CodexTranscriptStep(Step):
    name: ClassVar[str] = "codex_transcript"
    Settings = CodexSettings
    settings: CodexSettings

    def run(self, run: Any, state: dict[str, Any]) -> dict[str, Any]:
        reme = run.reme
        if flush_param(state.get("flush")) == FLUSH_IDLE:
            return {}  # a sweep of saved sessions: auto_memory reads no Codex file
        session_id = check_session_id(state.get("session_id"))
        path = find_rollout(codex_home(self.settings.codex_home), session_id)
        store = cursor_file(reme.state_dir, "codex", session_id)
        cursor = read_state(store) or {}
        offset = cursor.get("offset", 0)
        size = path.stat().st_size
        if (
            cursor.get("path") != str(path)
            or not isinstance(offset, int)
            or not 0 <= offset <= size
        ):
            offset = 0  # another file, or one rewritten shorter: read it all (ids dedupe)
        remembered = _offsets(cursor.get("unknown")) if offset == cursor.get("offset") else []
        retried: list[tuple[int, bytes]] = []
        with open(path, "rb") as fh:
            for start in (o for o in remembered if o < offset):
                fh.seek(start)
                line = fh.readline()
                if line.endswith(b"\n"):  # else the file changed under the cursor
                    retried.append((start, line[:-1]))
            fh.seek(offset)
            data = fh.read(self.settings.max_read_bytes)
            if b"\n" not in data and len(data) == self.settings.max_read_bytes:
                data += fh.readline()  # one line over the limit (big images) is read whole
        complete = data[: data.rfind(b"\n") + 1]  # a line still being written waits
        saved = load_transcript(reme, session_id).ids()
        shelf = session_images.Shelf(reme.root, session_id)
        calls: dict[str, str] = {}
        messages: list[dict[str, Any]] = []
        unknown: list[tuple[int, str]] = []
        for start, raw in retried:  # a reader that learnt their format saves them now
            obj = parse_line(raw)
            reason = unknown_reason(obj)
            message = to_message(obj, raw, shelf, calls) if reason is None else None
            if message is not None and message["id"] not in saved:
                messages.append(message)
                _save_images(shelf, obj, message["id"])
                unknown.append((start, "read again"))  # kept until its turn is saved
            elif reason is not None:
                unknown.append((start, reason))
        confirmed = position = offset
        cwd = cursor.get("cwd") if isinstance(cursor.get("cwd"), str) else None
        new_unknown = 0
        for raw in complete.split(b"\n")[:-1]:
            start, position = position, position + len(raw) + 1
            if not raw.strip():
                continue
            obj = parse_line(raw)
            reason = unknown_reason(obj)
            if reason is not None:
                unknown.append((start, reason))
                new_unknown += start not in remembered
                continue
            cwd = session_cwd(obj) or cwd
            calls.update(session_images.codex_calls(classify(obj)[1]))
            message = to_message(obj, raw, shelf, calls)
            if message is not None and message["id"] not in saved:
                messages.append(message)
                _save_images(shelf, obj, message["id"])
            if not messages:
                confirmed = position
        forgotten = max(0, len(unknown) - MAX_UNKNOWN)
        unknown = unknown[forgotten:]
        state_out: dict[str, Any] = {
            "path": str(path),
            "offset": confirmed,
            "unknown": [[o, r] for o, r in unknown],
        }
        if cwd:
            state_out["cwd"] = cwd  # session_meta is read once; later runs still have the hint
        write_state(store, state_out)
        at_end = offset + len(data) >= size
        info: dict[str, Any] = {
            "file": str(path),
            "offset": offset,
            "read_to": position,
            "partial_bytes": len(data) - len(complete) if at_end else 0,
        }
        images = shelf.report()
        if images:
            info["images"] = images
            if images["omitted"]:
                log.warning(
                    "codex session %s: %d image(s) not kept (first: %s)",
                    session_id,
                    images["omitted"],
                    images["first_omitted"],
                )
        if unknown:
            info["unknown_lines"] = {
                "count": len(unknown),
                "new": new_unknown,
                "forgotten": forgotten,
                "first": unknown[0][0],
                "reason": unknown[0][1],
            }
            if new_unknown:
                log.warning(
                    "codex session %s: %d new line(s) of %s in a format this reme does not know "
                    "(first at byte %d: %s); kept in Codex's file and read again on every capture",
                    session_id,
                    new_unknown,
                    path.name,
                    unknown[0][0],
                    unknown[0][1],
                )
        out: dict[str, Any] = {"session_id": session_id, "messages": messages, "codex": info}
        if cwd and not state.get("hint"):
            prompts = run.prompts("reme_plugins", "auto_memory")
            out["hint"] = prompts.render("codex_hint", cwd=redact(cwd)[0]).strip()
        return out


def _save_images(shelf: session_images.Shelf, obj: Any, turn: str) -> None:
    """Keep the images of a turn about to be saved (see claude_code._save_images)."""
    _, item = classify(obj)
    item = item or {}
    images = session_images.codex_tool_images(item) or session_images.codex_images(
        item.get("content")
    )
    if images:
        shelf.keep(turn, images)
