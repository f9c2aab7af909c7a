"""JSONL transcript chunker: consecutive turns rendered as ``role: content`` lines, packed by size.

Each line is one JSON object with ``role`` and ``content``; content is a string or a list of parts
(``{"type": "text", "text": ...}``), other keys are ignored. Claude Code's wrapped form
(``{"message": {"role": ..., "content": ...}}``) is unwrapped. Malformed and blank lines are
skipped: a transcript being appended to may end in a partial line.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import Field

from reme_core.api import Chunk, Chunker, ComponentSettings, hookimpl
from reme_plugins.chunker_text import LinePacker, paragraphs, split_lines


class JsonlChunkerSettings(ComponentSettings):
    """Chunk size in characters, and optionally a cap on turns per chunk (0 = by size only)."""

    max_chars: int = Field(1500, ge=200)
    turns_per_chunk: int = Field(0, ge=0)


@dataclass(frozen=True)
class Turn:
    """One rendered turn and the 0-based JSONL line it came from."""

    line: int
    role: str
    content: str

    @property
    def text(self) -> str:
        return f"{self.role}: {self.content}" if self.role else self.content


def render_content(content: Any) -> str:
    """Text of a message's content: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return ""
    texts: list[str] = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            texts.append(part["text"])
    return "\n".join(t.strip() for t in texts if t.strip())


def parse_turns(lines: list[str]) -> list[Turn]:
    """Turns with non-blank content, in order; lines that are not JSON objects are skipped."""
    turns: list[Turn] = []
    for index, raw in enumerate(lines):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(obj, dict):
            continue
        if "role" not in obj and isinstance(obj.get("message"), dict):
            obj = obj["message"]
        content = render_content(obj.get("content"))
        if not content:
            continue
        role = obj.get("role")
        turns.append(Turn(index, role.strip() if isinstance(role, str) else "", content))
    return turns


class JsonlTranscriptChunker(Chunker):
    """Packs consecutive transcript turns into chunks; line ranges are JSONL line numbers."""

    name: ClassVar[str] = "jsonl"
    Settings: ClassVar[type[ComponentSettings]] = JsonlChunkerSettings
    settings: JsonlChunkerSettings

    def chunk(self, path: str, text: str) -> list[Chunk]:
        """Return the chunks of the transcript ``text`` in document order."""
        pieces: list[tuple[int, int, str]] = []
        group: list[Turn] = []
        size = 0
        max_chars, per_chunk = self.settings.max_chars, self.settings.turns_per_chunk

        def flush() -> None:
            nonlocal size
            if group:
                pieces.append((group[0].line, group[-1].line, "\n".join(t.text for t in group)))
                group.clear()
                size = 0

        for turn in parse_turns(split_lines(text)):
            length = len(turn.text)
            if length > max_chars:
                flush()
                pieces.extend((turn.line, turn.line, p) for p in self._split_turn(turn))
                continue
            full = per_chunk and len(group) >= per_chunk
            if group and (full or size + 1 + length > max_chars):
                flush()
            size += length + (1 if group else 0)
            group.append(turn)
        flush()
        return [
            Chunk(path=path, ordinal=i, start_line=first + 1, end_line=last + 1, text=body)
            for i, (first, last, body) in enumerate(pieces)
        ]

    def _split_turn(self, turn: Turn) -> list[str]:
        """Pieces of one oversized turn, each prefixed with the role so it reads on its own."""
        prefix = f"{turn.role}: " if turn.role else ""
        lines = turn.content.split("\n")
        budget = self.settings.max_chars - len(prefix)
        spans = LinePacker(lines).pack(paragraphs(lines), budget, overlap=0)
        return [prefix + span.text for span in spans]


@hookimpl
def register_chunkers(register: Callable[[type[Chunker]], None]) -> None:
    """Register the JSONL transcript chunker."""
    register(JsonlTranscriptChunker)
