"""Plain-text chunker: paragraphs packed up to a size, long ones split at lines, then characters.

The line and packing helpers here are shared by the other shipped chunkers: markdown packs each
section's blocks with them, jsonl splits an oversized turn with them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import accumulate
from typing import ClassVar

from pydantic import Field, model_validator

from reme_core.api import Chunk, Chunker, ComponentSettings, hookimpl


class SizedChunkerSettings(ComponentSettings):
    """Piece size and overlap, both in characters (not bytes, so CJK text counts fairly)."""

    max_chars: int = Field(1500, ge=200)
    overlap_chars: int = Field(200, ge=0)

    @model_validator(mode="after")
    def _overlap_below_max(self) -> SizedChunkerSettings:
        if self.overlap_chars >= self.max_chars:
            raise ValueError(
                f"overlap_chars ({self.overlap_chars}) must be smaller than "
                f"max_chars ({self.max_chars})"
            )
        return self


def split_lines(text: str) -> list[str]:
    """Lines as an editor numbers them: split on ``\\n`` only, ``\\r`` of CRLF and a BOM dropped."""
    # str.splitlines() also splits on \x0c, \u2028 and others, which would shift line numbers.
    text = text.removeprefix("\ufeff")
    return [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]


def paragraphs(lines: list[str], start: int = 0, stop: int | None = None) -> list[tuple[int, int]]:
    """Runs of non-blank lines in ``lines[start:stop]`` as 0-based inclusive ``(first, last)``."""
    stop = len(lines) if stop is None else stop
    blocks: list[tuple[int, int]] = []
    first: int | None = None
    for i in range(start, stop):
        if lines[i].strip():
            if first is None:
                first = i
        elif first is not None:
            blocks.append((first, i - 1))
            first = None
    if first is not None:
        blocks.append((first, stop - 1))
    return blocks


@dataclass(frozen=True)
class Span:
    """A piece of a file: 0-based inclusive line indices and the text taken from those lines."""

    first: int
    last: int
    text: str


class LinePacker:
    """Packs blocks of lines into spans of at most ``budget`` characters."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        self._ends = list(accumulate(len(line) + 1 for line in lines))

    def size(self, first: int, last: int) -> int:
        """Characters in lines ``first..last`` joined by newlines."""
        return self._ends[last] - (self._ends[first - 1] if first else 0) - 1

    def text(self, first: int, last: int) -> str:
        """Lines ``first..last`` joined by newlines."""
        return "\n".join(self.lines[first : last + 1])

    def pack(self, blocks: list[tuple[int, int]], budget: int, overlap: int) -> list[Span]:
        """Pack ``blocks`` (kept whole when they fit) into spans, repeating ~``overlap`` chars."""
        # An overlap close to the budget would make every piece mostly repetition.
        overlap = min(overlap, budget // 2)
        spans: list[Span] = []
        cur: tuple[int, int] | None = None
        for first, last in self._units(blocks, budget):
            if first == last and len(self.lines[first]) > budget:
                if cur is not None:
                    spans.append(Span(cur[0], cur[1], self.text(*cur)))
                    cur = None
                spans.extend(self.cut_line(first, budget, overlap))
                continue
            if cur is not None and self.size(cur[0], last) <= budget:
                cur = (cur[0], last)
                continue
            start = first
            if cur is not None:
                spans.append(Span(cur[0], cur[1], self.text(*cur)))
                start = self._overlap_start(cur, first, last, budget, overlap)
            cur = (start, last)
        if cur is not None:
            spans.append(Span(cur[0], cur[1], self.text(*cur)))
        return spans

    def cut_line(self, index: int, budget: int, overlap: int) -> list[Span]:
        """Split one over-long line by characters, preferring a space in the second half."""
        line = self.lines[index]
        spans: list[Span] = []
        pos, n = 0, len(line)
        while pos < n:
            end = min(pos + budget, n)
            if end < n:
                space = line.rfind(" ", pos + budget // 2, end)
                if space > pos:
                    end = space + 1
            piece = line[pos:end].strip()
            if piece:
                spans.append(Span(index, index, piece))
            if end >= n:
                break
            # Step back for overlap, but always advance by at least half a piece.
            nxt = end - min(overlap, (end - pos) // 2)
            space = line.find(" ", nxt, end)
            pos = space + 1 if space != -1 else nxt
        return spans

    def _units(self, blocks: list[tuple[int, int]], budget: int) -> list[tuple[int, int]]:
        """Blocks that fit whole, or else their non-blank lines one by one."""
        units: list[tuple[int, int]] = []
        for first, last in blocks:
            if self.size(first, last) <= budget:
                units.append((first, last))
            else:
                units.extend((i, i) for i in range(first, last + 1) if self.lines[i].strip())
        return units

    def _overlap_start(
        self, prev: tuple[int, int], first: int, last: int, budget: int, overlap: int
    ) -> int:
        """Start of the next span: trailing lines of ``prev`` worth ~``overlap``, or ``first``."""
        prev_first, prev_last = prev
        i = prev_last + 1
        # Stop above prev_first so the next span always starts later than the previous one.
        while i - 1 > prev_first and self.size(i - 1, prev_last) <= overlap:
            i -= 1
        while i <= prev_last and not self.lines[i].strip():
            i += 1
        if i > prev_last or self.size(i, last) > budget:
            return first
        return i


class PlainTextChunker(Chunker):
    """Paragraphs packed up to ``max_chars``; long ones split at lines, huge lines by chars."""

    name: ClassVar[str] = "text"
    Settings: ClassVar[type[ComponentSettings]] = SizedChunkerSettings
    settings: SizedChunkerSettings

    def chunk(self, path: str, text: str) -> list[Chunk]:
        """Return the chunks of ``text`` in document order."""
        lines = split_lines(text)
        packer = LinePacker(lines)
        spans = packer.pack(paragraphs(lines), self.settings.max_chars, self.settings.overlap_chars)
        return [
            Chunk(path=path, ordinal=i, start_line=s.first + 1, end_line=s.last + 1, text=s.text)
            for i, s in enumerate(spans)
        ]


@hookimpl
def register_chunkers(register: Callable[[type[Chunker]], None]) -> None:
    """Register the plain-text chunker."""
    register(PlainTextChunker)
