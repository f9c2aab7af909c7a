"""Markdown chunker: one chunk per heading section, prefixed with its heading breadcrumb.

Fenced code blocks and tables are kept whole unless one alone exceeds ``max_chars``. Sections are
not merged with their neighbours, so every chunk's breadcrumb and line range stay precise; a
heading with no text of its own is skipped when a subheading follows (the subheading's breadcrumb
carries it).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

import yaml
from pydantic import Field

from reme_core.api import Chunk, Chunker, ComponentSettings, hookimpl
from reme_plugins.chunk_context import context_line, frontmatter_fields
from reme_plugins.chunker_text import LinePacker, SizedChunkerSettings, split_lines

_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_CLOSING_HASHES = re.compile(r"(?:^|[ \t]+)#+$")
# Fences match at any indentation: a fence nested in a list item must still hide its `#` lines.
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})(.*)$")
_SEPARATOR = " > "


class MarkdownChunkerSettings(SizedChunkerSettings):
    """Same knobs as the text chunker; ``max_chars`` includes the breadcrumb line.

    ``context_keys``: frontmatter keys whose values head every chunk's indexed text as one line
    (``[date]`` gives ``Monday 8 May 2023``; see ``reme_plugins.chunk_context``); not counted in
    ``max_chars``. Empty (the default): chunks hold only the note's own text.

    ``keyword_context_keys`` / ``vector_context_keys``: the same, but the line heads only what
    that arm indexes (``Chunk.keyword_text`` / ``Chunk.vector_text``), below any
    ``context_keys`` line; a hit still shows the note's own text. ``[replying_to]`` on the
    vector arm embeds a conversation turn with the turn it answers.
    """

    context_keys: list[str] = Field(default_factory=list)
    keyword_context_keys: list[str] = Field(default_factory=list)
    vector_context_keys: list[str] = Field(default_factory=list)


@dataclass
class _Section:
    """A heading (or the text before the first one) and the blocks of lines under it."""

    heading_line: int | None
    level: int
    breadcrumb: str
    blocks: list[tuple[int, int]] = field(default_factory=list)


def frontmatter(lines: list[str]) -> tuple[int, str]:
    """Index of the first body line after a YAML frontmatter block, and the note's ``name``."""
    if not lines or lines[0].rstrip() != "---":
        return 0, ""
    for i in range(1, len(lines)):
        if lines[i].rstrip() in ("---", "..."):
            return i + 1, _name("\n".join(lines[1:i]))
    return 0, ""  # never closed: not frontmatter, index it as text


# libyaml's loader when PyYAML was built with it: the pure-Python one was half of indexing time.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _name(block: str) -> str:
    try:
        data = yaml.load(block, Loader=_YAML_LOADER)
    except Exception:  # a bad frontmatter must not stop indexing; the catalog reports it
        return ""
    name = data.get("name") if isinstance(data, dict) else None
    if isinstance(name, str | int | float) and not isinstance(name, bool):
        return str(name).strip()
    return ""


def _heading(line: str) -> tuple[int, str] | None:
    match = _HEADING.match(line)
    if match is None:
        return None
    title = _CLOSING_HASHES.sub("", match.group(2) or "").strip()
    return len(match.group(1)), title


def _fence_end(lines: list[str], start: int, marker: str) -> int:
    """Index of the line closing the fence opened at ``start`` (the last line if never closed)."""
    char, length = marker[0], len(marker)
    for i in range(start + 1, len(lines)):
        stripped = lines[i].strip()
        if stripped and set(stripped) == {char} and len(stripped) >= length:
            return i
    return len(lines) - 1


def sections(lines: list[str], start: int, preamble: str) -> list[_Section]:
    """Split ``lines[start:]`` into heading sections whose blocks are paragraphs, fences, tables."""
    result = [_Section(None, 0, preamble)]
    trail: list[tuple[int, str]] = []
    block: tuple[int, int, bool] | None = None  # (first, last, is_table)

    def close() -> None:
        nonlocal block
        if block is not None:
            result[-1].blocks.append((block[0], block[1]))
            block = None

    i = start
    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if fence and not (fence.group(1)[0] == "`" and "`" in fence.group(2)):
            close()
            end = _fence_end(lines, i, fence.group(1))
            result[-1].blocks.append((i, end))
            i = end + 1
            continue
        heading = _heading(line)
        if heading is not None:
            close()
            level, title = heading
            trail = [(lvl, t) for lvl, t in trail if lvl < level] + [(level, title)]
            crumb = _SEPARATOR.join(t for _, t in trail if t)
            result.append(_Section(i, level, crumb))
        elif not line.strip():
            close()
        else:
            is_table = line.lstrip().startswith("|")
            if block is not None and block[2] != is_table:
                close()
            block = (i, i, is_table) if block is None else (block[0], i, is_table)
        i += 1
    close()
    return result


class MarkdownChunker(Chunker):
    """Heading-aware chunker for notes: breadcrumbed sections, code blocks and tables kept whole."""

    name: ClassVar[str] = "markdown"
    Settings: ClassVar[type[ComponentSettings]] = MarkdownChunkerSettings
    settings: MarkdownChunkerSettings

    def chunk(self, path: str, text: str) -> list[Chunk]:
        """Return the chunks of ``text`` in document order."""
        lines = split_lines(text)
        body_start, name = frontmatter(lines)
        packer = LinePacker(lines)
        parts = sections(lines, body_start, name)
        settings = self.settings
        wanted = (
            settings.context_keys or settings.keyword_context_keys or settings.vector_context_keys
        )
        fields = frontmatter_fields(lines) if wanted else {}
        context = context_line(fields, settings.context_keys)
        keyword_context = context_line(fields, settings.keyword_context_keys)
        vector_context = context_line(fields, settings.vector_context_keys)
        chunks: list[Chunk] = []
        for index, section in enumerate(parts):
            nxt = parts[index + 1] if index + 1 < len(parts) else None
            for first, last, body in self._pieces(section, nxt, packer):
                crumb = section.breadcrumb
                text = f"{crumb}\n{body}" if crumb and body else crumb or body
                text = f"{context}\n{text}" if context else text
                chunks.append(
                    Chunk(
                        path=path,
                        ordinal=len(chunks),
                        start_line=first + 1,
                        end_line=last + 1,
                        text=text,
                        heading=crumb,
                        keyword_text=f"{keyword_context}\n{text}" if keyword_context else None,
                        vector_text=f"{vector_context}\n{text}" if vector_context else None,
                    )
                )
        return chunks

    def _pieces(
        self, section: _Section, nxt: _Section | None, packer: LinePacker
    ) -> list[tuple[int, int, str]]:
        """``(first, last, body)`` pieces of one section; the first one starts at its heading."""
        if not section.blocks:
            # A bare heading: its subheadings' breadcrumbs carry it; a bare leaf stays findable.
            is_parent = nxt is not None and nxt.level > section.level
            if section.heading_line is None or is_parent or not section.breadcrumb:
                return []
            return [(section.heading_line, section.heading_line, "")]
        max_chars = self.settings.max_chars
        budget = max(max_chars - len(section.breadcrumb) - 1, max_chars // 2)
        spans = packer.pack(section.blocks, budget, self.settings.overlap_chars)
        pieces = [(s.first, s.last, s.text) for s in spans]
        if section.heading_line is not None:
            _, last, body = pieces[0]
            pieces[0] = (section.heading_line, last, body)
        return pieces


@hookimpl
def register_chunkers(register: Callable[[type[Chunker]], None]) -> None:
    """Register the markdown chunker."""
    register(MarkdownChunker)
