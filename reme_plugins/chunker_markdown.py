"""Markdown chunker: one chunk per heading section, prefixed with its heading breadcrumb.

Fenced code blocks and tables are kept whole unless one alone exceeds ``max_chars``. Sections are
not merged with their neighbours, so every chunk's breadcrumb and line range stay precise; a
heading with no text of its own is skipped when a subheading follows (the subheading's breadcrumb
carries it). With ``excerpt_chunks``, quoted excerpt items (list items anchored to a transcript
line, the message quoted under each) are not packed with their neighbours either: one exchange
(a user message and the replies under it), or one message, per chunk; with
``excerpt_user_chunks``, an exchange's user message is also a chunk of its own.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise
from typing import ClassVar, Literal

import yaml
from pydantic import Field

from reme_core.api import Chunk, Chunker, ComponentSettings, hookimpl
from reme_plugins.chunk_context import context_line, frontmatter_fields
from reme_plugins.chunker_text import LinePacker, SizedChunkerSettings, Span, split_lines

_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_CLOSING_HASHES = re.compile(r"(?:^|[ \t]+)#+$")
# Fences match at any indentation: a fence nested in a list item must still hide its `#` lines.
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})(.*)$")
_SEPARATOR = " > "
# An excerpt item as auto_memory writes one: a list item naming a transcript line
# (``- **user** 09:00 [[sessions/s1.jsonl#L12]]``), the quoted message below it.
_ANCHORED_ITEM = re.compile(r"^ {0,3}[-*+][ \t].*\[\[[^\]\n]+#L\d+")
_ROLE = re.compile(r"^ {0,3}[-*+][ \t]+\*\*([^*\n]+)\*\*")
_QUOTE = re.compile(r"^[ \t]*>")
ExcerptChunks = Literal["packed", "exchange", "message"]


class MarkdownChunkerSettings(SizedChunkerSettings):
    """Same knobs as the text chunker; ``max_chars`` includes the breadcrumb line.

    ``context_keys``: frontmatter keys whose values head every chunk's indexed text as one line
    (``[date]`` gives ``Monday 8 May 2023``; see ``reme_plugins.chunk_context``); not counted in
    ``max_chars``. Empty (the default): chunks hold only the note's own text.

    ``keyword_context_keys`` / ``vector_context_keys``: the same, but the line heads only what
    that arm indexes (``Chunk.keyword_text`` / ``Chunk.vector_text``), below any
    ``context_keys`` line; a hit still shows the note's own text. ``[replying_to]`` on the
    vector arm embeds a conversation turn with the turn it answers.

    ``excerpt_chunks``: how list items anchored to a transcript line with a quote below them (the
    excerpts and facts of auto_memory: ``- **user** 09:00 [[sessions/s1.jsonl#L12]]`` then
    ``  > ...``) are chunked. ``packed``: like any other lines, neighbours packed up to
    ``max_chars`` (a chunk may end in one message and start the next). ``exchange``: a user
    message's item starts a chunk, the replies under it (items of another role) join it, and the
    chunk ends with the exchange; an item without a role (a fact) is a chunk of its own.
    ``message``: every item is a chunk of its own. An exchange or message longer than
    ``max_chars`` is split into chunks of it alone. In both, the keyword arm indexes such a
    chunk without the note's breadcrumb: an excerpt note's title is its session's first words,
    which would match every message of the session. Notes without such items chunk the same
    whatever the setting (measured: plugins/beam/README.md).

    ``excerpt_user_chunks`` (with ``exchange``; nothing otherwise): an exchange's user message
    is also a chunk of its own, beside the exchange's chunks (two granularities of the same
    lines): a question about what the user said can find that message alone, which shows one
    message where the exchange shows two or more, and a reply still stands with the message it
    answers. Only where the exchange has replies in its first chunk and the user message fits in
    one chunk (a longer one already stands alone in its first chunks).
    """

    context_keys: list[str] = Field(default_factory=list)
    keyword_context_keys: list[str] = Field(default_factory=list)
    vector_context_keys: list[str] = Field(default_factory=list)
    excerpt_chunks: ExcerptChunks = "packed"
    excerpt_user_chunks: bool = False


@dataclass
class _Section:
    """A heading (or the text before the first one) and the blocks of lines under it."""

    heading_line: int | None
    level: int
    breadcrumb: str
    blocks: list[tuple[int, int]] = field(default_factory=list)
    cuts: set[int] = field(default_factory=set)
    """Indices into ``blocks`` that start a chunk of their own (``excerpt_chunks``)..."""
    excerpts: set[int] = field(default_factory=set)
    """... of which these are excerpt items."""


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


def _is_excerpt(lines: list[str], i: int) -> bool:
    """Line ``i`` opens an anchored list item whose next line is a quote."""
    return (
        i + 1 < len(lines)
        and _ANCHORED_ITEM.match(lines[i]) is not None
        and _QUOTE.match(lines[i + 1]) is not None
    )


def _is_user(line: str) -> bool:
    """An excerpt item of the user's (``- **user** ...``)."""
    role = _ROLE.match(line)
    return role is not None and role.group(1).strip().lower() == "user"


def _is_reply(line: str) -> bool:
    """An excerpt item of a role other than the user's (``- **assistant** ...``)."""
    role = _ROLE.match(line)
    return role is not None and role.group(1).strip().lower() != "user"


def sections(
    lines: list[str], start: int, preamble: str, excerpts: ExcerptChunks = "packed"
) -> list[_Section]:
    """Split ``lines[start:]`` into heading sections whose blocks are paragraphs, fences, tables;
    unless ``excerpts`` is ``packed``, a quoted excerpt item starts a block, and a cut where its
    chunk starts (at every item, or at each exchange's first)."""
    result = [_Section(None, 0, preamble)]
    trail: list[tuple[int, str]] = []
    block: tuple[int, int, bool] | None = None  # (first, last, is_table)
    excerpt_open = False  # the last block begun is an excerpt item

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
            if excerpt_open:
                result[-1].cuts.add(len(result[-1].blocks))
                excerpt_open = False
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
            excerpt_open = False
        elif not line.strip():
            close()
        else:
            is_table = line.lstrip().startswith("|")
            if block is not None and block[2] != is_table:
                close()
            if excerpts != "packed" and _is_excerpt(lines, i):
                close()
                joins = excerpts == "exchange" and excerpt_open and _is_reply(line)
                if not joins:
                    result[-1].cuts.add(len(result[-1].blocks))
                    result[-1].excerpts.add(len(result[-1].blocks))
                excerpt_open = True
            elif block is None and excerpt_open:
                # The first block after an excerpt (a paragraph below the list) is not packed
                # into that excerpt's chunk.
                result[-1].cuts.add(len(result[-1].blocks))
                excerpt_open = False
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
        settings = self.settings
        parts = sections(lines, body_start, name, settings.excerpt_chunks)
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
            for first, last, body, excerpt in self._pieces(section, nxt, packer):
                crumb = section.breadcrumb
                text = f"{crumb}\n{body}" if crumb and body else crumb or body
                text = f"{context}\n{text}" if context else text
                keyword = text
                if excerpt and crumb:
                    # The note's title is its session's first words, not this message's: the
                    # keyword arm would match every message of the session on them.
                    keyword = f"{context}\n{body}" if context else body
                if keyword_context:
                    keyword = f"{keyword_context}\n{keyword}"
                chunks.append(
                    Chunk(
                        path=path,
                        ordinal=len(chunks),
                        start_line=first + 1,
                        end_line=last + 1,
                        text=text,
                        heading=crumb,
                        keyword_text=keyword if keyword != text else None,
                        vector_text=f"{vector_context}\n{text}" if vector_context else None,
                    )
                )
        return chunks

    def _pieces(
        self, section: _Section, nxt: _Section | None, packer: LinePacker
    ) -> list[tuple[int, int, str, bool]]:
        """``(first, last, body, is_excerpt)`` pieces of one section; the first one starts at its
        heading."""
        if not section.blocks:
            # A bare heading: its subheadings' breadcrumbs carry it; a bare leaf stays findable.
            is_parent = nxt is not None and nxt.level > section.level
            if section.heading_line is None or is_parent or not section.breadcrumb:
                return []
            return [(section.heading_line, section.heading_line, "", False)]
        max_chars = self.settings.max_chars
        budget = max(max_chars - len(section.breadcrumb) - 1, max_chars // 2)
        overlap = self.settings.overlap_chars
        bounds = sorted({0, *section.cuts, len(section.blocks)})
        settings = self.settings
        user_chunks = settings.excerpt_chunks == "exchange" and settings.excerpt_user_chunks
        pieces: list[tuple[int, int, str, bool]] = []
        for lo, hi in pairwise(bounds):
            packed = packer.pack(section.blocks[lo:hi], budget, overlap)
            excerpt = lo in section.excerpts
            pieces.extend((s.first, s.last, s.text, excerpt) for s in packed)
            if user_chunks and excerpt and hi - lo > 1:
                alone = self._user_alone(section.blocks[lo], packed, packer, budget)
                if alone is not None:
                    # Right after the exchange's first chunk, which starts on the same line.
                    at = len(pieces) - len(packed) + 1
                    pieces.insert(at, (alone.first, alone.last, alone.text, True))
        if section.heading_line is not None:
            _, last, body, excerpt = pieces[0]
            pieces[0] = (section.heading_line, last, body, excerpt)
        return pieces

    @staticmethod
    def _user_alone(
        block: tuple[int, int], packed: list[Span], packer: LinePacker, budget: int
    ) -> Span | None:
        """The user message of an exchange (its first block) as a chunk of its own, or None: not
        a user message, its exchange's first chunk holds nothing more, or it does not fit."""
        first, last = block
        if not packed or packed[0].last <= last or not _is_user(packer.lines[first]):
            return None
        if packer.size(first, last) > budget:
            return None
        return Span(first, last, packer.text(first, last))


@hookimpl
def register_chunkers(register: Callable[[type[Chunker]], None]) -> None:
    """Register the markdown chunker."""
    register(MarkdownChunker)
