"""Wikilinks: parse ``[[target#anchor|alias]]``, resolve them like Obsidian, rewrite on a move."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

from reme_core.schema import Link

LinkState = Literal["resolved", "missing", "ambiguous"]

_LINK = re.compile(r"(!?)\[\[([^\[\]\n]+?)\]\]")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_TICKS = re.compile(r"`+")


@dataclass(frozen=True)
class ParsedLink:
    """One wikilink as written. Offsets index the whole text; ``line`` is 1-based."""

    raw: str
    anchor: str | None
    alias: str | None
    embed: bool
    line: int
    start: int
    end: int
    raw_start: int
    raw_end: int


def _mask_inline_code(line: str) -> str:
    """Blank out inline code spans (same length) so links inside them are not seen."""
    out = list(line)
    pos = 0
    while True:
        m = _TICKS.search(line, pos)
        if m is None:
            break
        ticks = m.group(0)
        close = re.compile(rf"(?<!`){ticks}(?!`)").search(line, m.end())
        if close is None:
            pos = m.end()
            continue
        for i in range(m.start(), close.end()):
            out[i] = " "
        pos = close.end()
    return "".join(out)


def _code_free_lines(text: str) -> Iterator[tuple[int, int, str]]:
    """Yield ``(line number, offset, line with code masked)`` for lines outside fenced blocks."""
    fence: str | None = None
    offset = 0
    # Only "\n" ends a line, so line numbers agree with the file tools and the chunkers.
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])
    for number, line in enumerate(lines, start=1):
        start = offset
        offset += len(line)
        m = _FENCE.match(line)
        if fence is None:
            if m:
                fence = m.group(1)
                continue
            yield number, start, _mask_inline_code(line)
        elif (
            m
            and m.group(1)[0] == fence[0]
            and len(m.group(1)) >= len(fence)
            and line.strip() == m.group(1)
        ):
            fence = None


def parse_links(text: str) -> list[ParsedLink]:
    """Every wikilink outside code, in order. Empty targets (``[[#heading]]``) are skipped."""
    links: list[ParsedLink] = []
    for number, offset, line in _code_free_lines(text):
        for m in _LINK.finditer(line):
            inner = m.group(2)
            inner_start = offset + m.start(2)
            target_part, alias = inner, None
            bar = inner.find("|")
            if bar != -1:
                target_part, alias = inner[:bar], inner[bar + 1 :]
                if target_part.endswith("\\"):  # an escaped pipe inside a Markdown table
                    target_part = target_part[:-1]
            raw, anchor = target_part, None
            hash_ = target_part.find("#")
            if hash_ != -1:
                raw, anchor = target_part[:hash_], target_part[hash_ + 1 :]
            lead = len(raw) - len(raw.lstrip())
            stripped = raw.strip()
            if not stripped:
                continue
            links.append(
                ParsedLink(
                    raw=stripped,
                    anchor=anchor.strip() or None if anchor is not None else None,
                    alias=alias.strip() or None if alias is not None else None,
                    embed=m.group(1) == "!",
                    line=number,
                    start=offset + m.start(),
                    end=offset + m.end(),
                    raw_start=inner_start + lead,
                    raw_end=inner_start + lead + len(stripped),
                )
            )
    return links


def _strip_md(path: str) -> str:
    return path[:-3] if path.lower().endswith(".md") else path


def _name_keys(path: str) -> set[str]:
    base = posixpath.basename(path).lower()
    return {base, _strip_md(base)}


def target_names(paths: Iterable[str]) -> set[str]:
    """The lowercase file names (with and without ``.md``) links could use to reach ``paths``."""
    return {key for path in paths for key in _name_keys(path)}


def may_resolve_to(raw: str, names: set[str]) -> bool:
    """Whether link target ``raw`` could resolve to a file with one of ``names``
    (``target_names``): every way of resolving (exact path, path + .md, relative to the
    source, unique name) ends in a file whose name is the last part of ``raw``."""
    target = raw.strip().replace("\\", "/").rstrip("/")
    return posixpath.basename(target).lower() in names


class LinkResolver:
    """Resolves link targets against a set of workspace paths; cheap to keep up to date."""

    def __init__(self, paths: Iterable[str] = ()):
        self._paths: set[str] = set()
        self._by_name: dict[str, set[str]] = {}
        for path in paths:
            self.add(path)

    def __contains__(self, path: object) -> bool:
        return path in self._paths

    def __len__(self) -> int:
        return len(self._paths)

    def add(self, path: str) -> None:
        """Start resolving links to ``path``."""
        if path in self._paths:
            return
        self._paths.add(path)
        for key in _name_keys(path):
            self._by_name.setdefault(key, set()).add(path)

    def remove(self, path: str) -> None:
        """Stop resolving links to ``path``."""
        if path not in self._paths:
            return
        self._paths.discard(path)
        for key in _name_keys(path):
            bucket = self._by_name.get(key)
            if bucket is not None:
                bucket.discard(path)
                if not bucket:
                    del self._by_name[key]

    def resolve(self, raw: str, source: str | None = None) -> tuple[LinkState, str | None]:
        """Return ``(state, target)``: exact path, path + .md, relative to source, unique name."""
        target = raw.strip().replace("\\", "/").lstrip("/")
        if not target:
            return "missing", None
        for candidate in (target, target + ".md"):
            if candidate in self._paths:
                return "resolved", candidate
        if source is not None:
            folder = posixpath.dirname(source)
            joined = posixpath.normpath(posixpath.join(folder, target))
            if not joined.startswith("../") and joined != "..":
                for candidate in (joined, joined + ".md"):
                    if candidate in self._paths:
                        return "resolved", candidate
        matches = self._name_matches(target)
        if len(matches) == 1:
            return "resolved", next(iter(matches))
        if len(matches) > 1:
            return "ambiguous", None
        return "missing", None

    def _name_matches(self, target: str) -> set[str]:
        # A link may carry part of the folder path ("wiki/topic"); the file must end with it.
        bucket = self._by_name.get(posixpath.basename(target).lower(), set())
        wanted = "/" + target.lower()
        return {
            p
            for p in bucket
            if ("/" + p.lower()).endswith(wanted)
            or (p.lower().endswith(".md") and ("/" + p.lower())[:-3].endswith(wanted))
        }

    def links_for(self, source: str, text: str) -> list[Link]:
        """Parse and resolve every wikilink in ``text`` written in note ``source``."""
        out: list[Link] = []
        for parsed in parse_links(text):
            state, target = self.resolve(parsed.raw, source)
            out.append(
                Link(
                    source=source,
                    raw=parsed.raw,
                    target=target,
                    anchor=parsed.anchor,
                    alias=parsed.alias,
                    embed=parsed.embed,
                    line=parsed.line,
                    state=state,
                )
            )
        return out

    def link_text_for(
        self, new_path: str, *, old_path: str | None = None, keep_md: bool = False
    ) -> str:
        """The shortest link target that resolves to ``new_path`` once ``old_path`` is gone."""
        is_md = new_path.lower().endswith(".md")
        base = posixpath.basename(new_path)
        short = base if (keep_md or not is_md) else base[:-3]
        rivals = self._name_matches(short) - {old_path, new_path}
        if not rivals:
            return short
        return new_path if (keep_md or not is_md) else new_path[:-3]


def rewrite_links(
    text: str,
    old_path: str,
    new_path: str,
    resolver: LinkResolver,
    source: str,
) -> tuple[str, int]:
    """Point links that resolve to ``old_path`` at ``new_path``; returns (text, links rewritten).

    ``resolver`` describes the workspace before the move (it holds ``old_path``); anchors,
    aliases and embeds are kept, and only the target part of each link changes.
    """
    pieces: list[str] = []
    last = 0
    count = 0
    for parsed in parse_links(text):
        state, target = resolver.resolve(parsed.raw, source)
        if state != "resolved" or target != old_path:
            continue
        keep_md = parsed.raw.lower().endswith(".md")
        replacement = resolver.link_text_for(new_path, old_path=old_path, keep_md=keep_md)
        pieces.append(text[last : parsed.raw_start])
        pieces.append(replacement)
        last = parsed.raw_end
        count += 1
    if count == 0:
        return text, 0
    pieces.append(text[last:])
    return "".join(pieces), count
