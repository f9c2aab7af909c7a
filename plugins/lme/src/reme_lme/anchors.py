"""From a search hit to the transcript lines it stands for.

A hit in a transcript (``sessions/<id>.jsonl``) stands for its own lines. A hit in a note stands
for the transcript lines the note anchors to (``[[sessions/<id>.jsonl#L12]]``, as auto_memory
and the raw ingestion write them): the anchors inside the hit's lines, and the last anchor before
them when the hit starts inside an anchored passage. A hit anchoring nowhere stands for nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ANCHOR = re.compile(r"\[\[(sessions/[^\]#|]+\.jsonl)#L(\d+)(?:-L?(\d+))?(?:\|[^\]]*)?\]\]")


@dataclass(frozen=True, order=True)
class Span:
    """Lines ``start..end`` (1-based, inclusive) of one transcript."""

    transcript: str
    start: int
    end: int


def is_transcript(path: str) -> bool:
    return path.startswith("sessions/") and path.endswith(".jsonl")


def anchor_link(file_id: str, line: int, label: str | None = None) -> str:
    """``[[sessions/<file id>.jsonl#L<line>|label]]`` (the opaque ``ingest.file_id``, not the
    upstream session id: the anchor is indexed text)."""
    return f"[[sessions/{file_id}.jsonl#L{line}" + (f"|{label}]]" if label else "]]")


class SpanResolver:
    """Resolves hits to transcript spans, reading each note once (``read`` returns a workspace
    file's text, or None when it is gone)."""

    def __init__(self, read: Callable[[str], str | None]):
        self._read = read
        self._anchors: dict[str, list[tuple[int, Span]]] = {}

    @classmethod
    def for_folder(cls, root: Path) -> SpanResolver:
        def read(path: str) -> str | None:
            try:
                return (root / path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                return None

        return cls(read)

    def spans(self, path: str, start_line: int, end_line: int) -> list[Span]:
        if is_transcript(path):
            return [Span(path, start_line, end_line)]
        anchors = self._note_anchors(path)
        inside = [span for line, span in anchors if start_line <= line <= end_line]
        before = [span for line, span in anchors if line < start_line]
        first_line = next((line for line, _ in anchors if start_line <= line <= end_line), None)
        if before and (first_line is None or first_line > start_line):
            inside.insert(0, before[-1])  # the hit starts inside the passage of that anchor
        return list(dict.fromkeys(inside))

    def _note_anchors(self, path: str) -> list[tuple[int, Span]]:
        if path not in self._anchors:
            text = self._read(path) or ""
            found: list[tuple[int, Span]] = []
            for number, line in enumerate(text.splitlines(), start=1):
                for match in ANCHOR.finditer(line):
                    start = int(match.group(2))
                    end = int(match.group(3) or start)
                    found.append((number, Span(match.group(1), start, max(start, end))))
            self._anchors[path] = found
        return self._anchors[path]
