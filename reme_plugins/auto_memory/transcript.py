"""The saved transcript ``sessions/<session_id>.jsonl``: input messages, merge by id, append.

The file is append-only: one JSON object per line (``id``, ``role``, ``content``, optional
``timestamp``), so a line number stays valid for as long as the file exists and notes can anchor
to it (``[[sessions/s1.jsonl#L12]]``). Every message is redacted before it is merged, so no
secret reaches the disk, a prompt or the step's outputs.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from reme_core.api import RemeError, content_hash, redact, split_lines

if TYPE_CHECKING:
    from reme_core.api import Reme

ROLES = ("user", "assistant", "system", "tool")
SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}")
MAX_ID_CHARS = 200
MAX_HINT_CHARS = 2000


class AutoMemoryError(RemeError):
    """A request to auto_memory is malformed, or its session's state cannot be used."""


def check_session_id(value: Any) -> str:
    """A session id that is safe as a file name; anything else is refused before any I/O."""
    if not isinstance(value, str) or not value:
        raise AutoMemoryError(
            "auto_memory needs a `session_id` param (text), e.g. --param session_id=s1"
        )
    if not SESSION_ID.fullmatch(value) or ".." in value:
        raise AutoMemoryError(
            f"session_id {value[:80]!r} is not allowed: use 1-128 letters, digits, '.', '_' "
            "or '-', starting with a letter or digit (it names sessions/<session_id>.jsonl)"
        )
    return value


def transcript_path(session_id: str) -> str:
    return f"sessions/{session_id}.jsonl"


@dataclass(frozen=True)
class Message:
    """One validated, redacted turn as the caller sent it."""

    role: str
    content: str
    timestamp: dt.datetime | None = None
    id: str | None = None


@dataclass(frozen=True)
class Entry:
    """One message line of the saved transcript (``line`` is 1-based)."""

    line: int
    id: str
    role: str
    content: str
    timestamp: dt.datetime | None = None
    received: dt.datetime | None = None
    """When a turn sent without a timestamp was saved: it decides the turn's day, so a turn
    processed late (after a failed call) still goes to the day it was said."""

    @property
    def when(self) -> dt.datetime | None:
        return self.timestamp or self.received

    def as_json(self) -> str:
        data: dict[str, Any] = {"id": self.id, "role": self.role, "content": self.content}
        if self.timestamp is not None:
            data["timestamp"] = self.timestamp.isoformat()
        if self.received is not None:
            data["received"] = self.received.isoformat()
        return json.dumps(data, ensure_ascii=False)


def parse_messages(value: Any, tz: dt.tzinfo) -> tuple[list[Message], Counter[str]]:
    """Validate the ``messages`` param and redact each turn; returns the redaction counts too.

    Accepted: a list of ``{role, content, timestamp?, id?}``; content is text or a list of text
    parts (``{"type": "text", "text": ...}``, other parts such as images are left out); other keys
    are ignored. A turn whose content is empty is dropped.
    """
    if not isinstance(value, list):
        raise AutoMemoryError(
            "`messages` must be a list of {role, content} objects, e.g. "
            "--param messages=@messages.json, not "
            f"{type(value).__name__}"
        )
    counts: Counter[str] = Counter()
    out: list[Message] = []
    for index, item in enumerate(value):
        where = f"messages[{index}]"
        if not isinstance(item, dict):
            raise AutoMemoryError(
                f"{where} must be an object with role and content, not {type(item).__name__}"
            )
        role = item.get("role")
        if role not in ROLES:
            raise AutoMemoryError(f"{where}.role: {role!r} is not one of {', '.join(ROLES)}")
        if "content" not in item:
            raise AutoMemoryError(f"{where} has no content")
        text, found = redact(_content_text(item["content"], where))
        counts.update(found)
        stamp = parse_timestamp(item.get("timestamp"), tz, f"{where}.timestamp")
        ident = item.get("id")
        if ident is not None:
            if isinstance(ident, bool) or not isinstance(ident, str | int):
                raise AutoMemoryError(f"{where}.id must be text or a number")
            ident = str(ident)
            if not ident.strip() or len(ident) > MAX_ID_CHARS:
                raise AutoMemoryError(f"{where}.id must be 1-{MAX_ID_CHARS} characters")
        if text.strip():
            out.append(Message(role=role, content=text, timestamp=stamp, id=ident))
    return out, counts


def _content_text(content: Any, where: str) -> str:
    if content is None:
        return ""  # OpenAI-style assistant turns that only call tools
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts: list[str] = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict):
                if isinstance(part.get("text"), str):
                    texts.append(part["text"])
            else:
                raise AutoMemoryError(f"{where}.content: parts must be text or objects")
        return "\n".join(texts)
    raise AutoMemoryError(
        f"{where}.content must be text or a list of text parts, not {type(content).__name__}"
    )


def parse_timestamp(value: Any, tz: dt.tzinfo, where: str) -> dt.datetime | None:
    """ISO 8601 text (a naive one is in ``tz``) or epoch seconds (milliseconds above 1e11)."""
    if value is None or value == "":
        return None
    if isinstance(value, dt.datetime):
        stamp = value
    elif isinstance(value, int | float) and not isinstance(value, bool):
        seconds = value / 1000 if value > 1e11 else value
        try:
            stamp = dt.datetime.fromtimestamp(seconds, tz=dt.UTC)
        except (OverflowError, OSError, ValueError):
            raise AutoMemoryError(f"{where}: {value!r} is not a valid epoch time") from None
    elif isinstance(value, str):
        try:
            stamp = dt.datetime.fromisoformat(value.strip())
        except ValueError:
            raise AutoMemoryError(
                f"{where}: {value[:60]!r} is not an ISO 8601 time (e.g. 2026-11-02T16:40:00Z)"
            ) from None
    else:
        raise AutoMemoryError(f"{where} must be ISO 8601 text or epoch seconds")
    return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=tz)


def derived_id(role: str, content: str, timestamp: dt.datetime | None) -> str:
    """A stable id for a message sent without one, so resending a batch adds nothing."""
    stamp = timestamp.isoformat() if timestamp is not None else ""
    digest = hashlib.sha256(f"{role}\0{content}\0{stamp}".encode()).hexdigest()
    return f"h-{digest[:20]}"


@dataclass
class Transcript:
    """The saved transcript of one session, as read from disk."""

    session_id: str
    hash: str | None = None
    """The content hash of the file as read; None when there is none yet."""
    entries: list[Entry] = field(default_factory=list)
    line_count: int = 0

    @property
    def path(self) -> str:
        return transcript_path(self.session_id)

    def ids(self) -> set[str]:
        return {entry.id for entry in self.entries}

    def merge(self, messages: list[Message]) -> list[Entry]:
        """Append messages whose id is new (in order); return the entries added."""
        known = self.ids()
        now = dt.datetime.now(dt.UTC).replace(microsecond=0)
        added: list[Entry] = []
        for message in messages:
            ident = message.id or derived_id(message.role, message.content, message.timestamp)
            if ident in known:
                continue  # already saved: lines are append-only, a changed resend is ignored
            known.add(ident)
            self.line_count += 1
            received = None if message.timestamp is not None else now
            added.append(
                Entry(
                    self.line_count,
                    ident,
                    message.role,
                    message.content,
                    message.timestamp,
                    received,
                )
            )
        self.entries.extend(added)
        return added


def load_transcript(reme: Reme, session_id: str) -> Transcript:
    """Read ``sessions/<session_id>.jsonl``; lines that are not messages keep their number."""
    rel = transcript_path(session_id)
    _, absolute = reme.paths.resolve(rel)
    if not absolute.is_file():
        return Transcript(session_id)
    try:
        data = absolute.read_bytes()
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise AutoMemoryError(f"cannot read {rel}: {exc}") from exc
    lines = split_lines(text)
    tz = reme.settings.tzinfo()
    entries: list[Entry] = []
    for number, raw in enumerate(lines, start=1):
        entry = _entry(number, raw, tz)
        if entry is not None:
            entries.append(entry)
    return Transcript(session_id, content_hash(data), entries, len(lines))


def _entry(number: int, raw: str, tz: dt.tzinfo) -> Entry | None:
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(data, dict) or data.get("role") not in ROLES:
        return None
    content = data.get("content")
    if not isinstance(content, str):
        return None
    stamp = _time_or_none(data.get("timestamp"), tz)
    role = data["role"]
    ident = data.get("id")
    ident = str(ident) if isinstance(ident, str | int) else derived_id(role, content, stamp)
    return Entry(number, ident, role, content, stamp, _time_or_none(data.get("received"), tz))


def _time_or_none(value: Any, tz: dt.tzinfo) -> dt.datetime | None:
    try:
        return parse_timestamp(value, tz, "timestamp")
    except AutoMemoryError:
        return None  # a hand-edited line with a bad time still counts as a turn


def save_transcript(reme: Reme, transcript: Transcript, added: list[Entry]) -> None:
    """Append ``added`` to the file (atomic, journalled and indexed, by the file tools); a file
    changed since it was read is a conflict, so line numbers never shift under the entries."""
    if not added:
        return
    lines = [entry.as_json() for entry in added]
    result = reme.files.append_lines(transcript.path, lines, expected_hash=transcript.hash)
    transcript.hash = result.content_hash
