"""Links in digest nodes: comparable link keys, the ``## Sources`` section, paths the model names.

Verification compares links by what they point at, so ``[[larkspur-architecture]]`` rewritten as
``[[digest/wiki/larkspur-architecture]]`` still counts as the same link.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from reme_core.api import LinkResolver, parse_links

SOURCES_HEADING = "## Sources"
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def normalise_path(path: str) -> str:
    """A path as the model may write it (``[[x]]``, ``./x``, ``/x``, no ``.md``) made plain."""
    text = path.strip()
    if text.startswith("[[") and text.endswith("]]"):
        text = text[2:-2].split("|", 1)[0].split("#", 1)[0].strip()
    text = text.replace("\\", "/")
    while text.startswith("./"):
        text = text[2:]
    return text.lstrip("/")


def note_path(path: str) -> str:
    """``normalise_path`` plus the ``.md`` a link may leave out."""
    text = normalise_path(path)
    return text if text.lower().endswith(".md") else text + ".md"


def target_path(path: str) -> str:
    """A decision's target: ``normalise_path``, plus ``.md`` when the name has no suffix at all
    (``digest/wiki/x`` means the note; ``digest/wiki/x.txt`` stays wrong and is refused)."""
    text = normalise_path(path)
    return text if "." in posixpath.basename(text) else text + ".md"


def link_text(path: str) -> str:
    """The wikilink written for a workspace path (Obsidian style, without ``.md``)."""
    return f"[[{path[:-3] if path.lower().endswith('.md') else path}]]"


def _raw_key(raw: str) -> str:
    text = normalise_path(raw).lower()
    return text[:-3] if text.endswith(".md") else text


@dataclass(frozen=True)
class LinkKeys:
    """Resolves links written in one note to comparable keys."""

    resolver: LinkResolver
    source: str
    """The note the links are written in (relative links resolve from its folder)."""

    def key(self, raw: str) -> str:
        state, target = self.resolver.resolve(raw, self.source)
        return target if state == "resolved" and target else "?" + _raw_key(raw)

    def keys(self, text: str) -> dict[str, str]:
        """Key -> the link as first written, for every wikilink in ``text``."""
        found: dict[str, str] = {}
        for link in parse_links(text):
            found.setdefault(self.key(link.raw), f"[[{link.raw}]]")
        return found

    def path_key(self, path: str) -> str:
        """The key of a link to workspace path ``path``."""
        return self.key(path)


@dataclass(frozen=True)
class Section:
    start: int
    """Index of the heading line."""
    end: int
    """Index one past the section's last line."""


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def find_sources(text: str) -> Section | None:
    """The ``## Sources`` section (any heading level, case-insensitive), outside code fences."""
    lines = _lines(text)
    fence: str | None = None
    found: tuple[int, int] | None = None
    for index, line in enumerate(lines):
        fenced = _FENCE.match(line)
        if fence is not None:
            if fenced and fenced.group(1)[0] == fence[0] and line.strip() == fenced.group(1):
                fence = None
            continue
        if fenced:
            fence = fenced.group(1)
            continue
        heading = _HEADING.match(line.rstrip("\r\n"))
        if heading is None:
            continue
        level = len(heading.group(1))
        if found is not None and level <= found[1]:
            return Section(found[0], index)
        if found is None and heading.group(2).strip().lower() == "sources":
            found = (index, level)
    return Section(found[0], len(lines)) if found is not None else None


def sources_text(text: str) -> str:
    """The text of the ``## Sources`` section ('' when there is none)."""
    section = find_sources(text)
    if section is None:
        return ""
    return "".join(_lines(text)[section.start : section.end])


def add_sources(text: str, paths: list[str], keys: LinkKeys) -> str:
    """Append links to the ``paths`` the Sources section does not link yet (creating it)."""
    present = set(keys.keys(sources_text(text)))
    missing = [p for p in paths if keys.path_key(p) not in present]
    if not missing:
        return text
    items = [f"- {link_text(p)}\n" for p in missing]
    lines = _lines(text)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    section = find_sources(text)
    if section is None:
        spacer = ["\n"] if lines and lines[-1].strip() else []
        return "".join([*lines, *spacer, f"{SOURCES_HEADING}\n", "\n", *items])
    last = section.start
    for index in range(section.start, section.end):
        if lines[index].strip():
            last = index
    if last == section.start:  # an empty section: keep one blank line under the heading
        items = ["\n", *items]
    return "".join([*lines[: last + 1], *items, *lines[last + 1 :]])


def is_bucket_path(path: str, buckets: tuple[str, ...]) -> bool:
    """True for ``digest/<bucket>/...md`` with a plain relative path (no ``..``, no hidden part)."""
    parts = path.split("/")
    if len(parts) < 3 or parts[0] != "digest" or parts[1] not in buckets:
        return False
    if any(p in ("", ".", "..") or p.startswith(".") for p in parts):
        return False
    return path.endswith(".md") and posixpath.basename(path) != ".md"
