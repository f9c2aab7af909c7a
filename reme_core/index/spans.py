"""Chunk texts kept as spans of their note, not as copies: the note is the source of truth.

A chunker's text is nearly always a piece of the note, maybe behind its heading breadcrumb
(``"Title > Section\\n"`` + lines of the note). The catalog records where that piece lies (a
character range of the decoded note) and the SHA-256 digest of the whole chunk text; reading a
chunk back slices the note as it is on disk now and checks the digest. A text that is not such a
piece (a JSONL turn rendered from its fields, CRLF lines) is stored whole instead.

A note edited after it was indexed (the watcher or the next scan has not caught up yet) no longer
yields a chunk whose digest matches: that chunk's text is then unavailable, never a wrong one.
Search drops such a hit, as it does one whose note vanished; the next scan indexes the edit.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from typing import NamedTuple

from reme_core.schema import Chunk

NoteReader = Callable[[str], str | None]
"""Workspace-relative path -> the note's current text (None: unreadable, gone or refused)."""


class Span(NamedTuple):
    """Where a chunk's text lies in its note: ``note[start:end]``, behind ``heading + "\\n"`` when
    ``prefixed``."""

    start: int
    end: int
    prefixed: bool


class StoredText(NamedTuple):
    """What the catalog keeps of one chunk's text: a span of the note, or else the text."""

    digest: bytes
    span: Span | None
    text: str | None


def digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


def store(chunks: Iterable[Chunk], note_text: str | None) -> list[StoredText]:
    """How to keep each of ``chunks`` (of one note whose text was ``note_text``): spans where the
    text is a piece of the note, whole texts otherwise (or when the note text is not given)."""
    line_starts = _line_starts(note_text) if note_text is not None else []
    out: list[StoredText] = []
    for chunk in chunks:
        span = None
        if note_text is not None:
            hint = line_starts[min(chunk.start_line, len(line_starts)) - 1]
            span = locate(note_text, chunk.text, chunk.heading, hint)
        out.append(StoredText(digest(chunk.text), span, None if span else chunk.text))
    return out


def locate(note_text: str, text: str, heading: str, hint: int = 0) -> Span | None:
    """The span of ``note_text`` that gives ``text`` back (searched from ``hint`` first), if any."""
    prefix = heading + "\n"
    prefixed = bool(heading) and text.startswith(prefix)
    body = text[len(prefix) :] if prefixed else text
    if not body:
        return None  # a bare heading: nothing of the note to point at; stored whole (short)
    start = note_text.find(body, hint)
    if start < 0:
        start = note_text.find(body)
    if start < 0:
        return None
    return Span(start, start + len(body), prefixed)


def rebuild(note_text: str, heading: str, span: Span) -> str:
    body = note_text[span.start : span.end]
    return f"{heading}\n{body}" if span.prefixed else body


class Resolver:
    """Texts of chunk rows, reading each note once per call, each checked against its digest."""

    def __init__(self, read: NoteReader | None):
        self._read = read
        self._notes: dict[str, str | None] = {}

    def text(
        self, path: str, heading: str, digest_: bytes, span: Span | None, text: str | None
    ) -> str | None:
        """The chunk's text, or None when the note no longer holds it."""
        if text is not None:
            return text
        if span is None or self._read is None:
            return None
        if path not in self._notes:
            self._notes[path] = self._read(path)
        note = self._notes[path]
        if note is None:
            return None
        found = rebuild(note, heading, span)
        return found if digest(found) == digest_ else None


def _line_starts(text: str) -> list[int]:
    """Character offset of each line (split on ``\\n``, as the chunkers number lines)."""
    starts = [0]
    find = text.find
    pos = find("\n")
    while pos >= 0:
        starts.append(pos + 1)
        pos = find("\n", pos + 1)
    return starts


def span_columns(stored: StoredText) -> tuple[int | None, int | None, int]:
    """The span as catalog columns ``(span_start, span_end, prefixed)``."""
    if stored.span is None:
        return None, None, 0
    return stored.span.start, stored.span.end, int(stored.span.prefixed)


def span_of(start: int | None, end: int | None, prefixed: int) -> Span | None:
    return None if start is None or end is None else Span(start, end, bool(prefixed))
