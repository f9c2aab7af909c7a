"""The session note's Markdown: a title and summary, then `Key facts`, `Timeline` and, while some
turns are not summarised, a verbatim excerpt section.

Code, not the model, writes the Markdown, so anchors point at real transcript lines and the
timeline is append-only: existing timeline lines are kept byte for byte and new entries go after
them. Section headings are recognised in every prompt language, so switching ``language`` does
not duplicate sections.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import unicodedata
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

from reme_core.api import (
    PROMPT_LANGUAGES,
    Prompts,
    RemeError,
    content_hash,
    load_prompts,
    parse_frontmatter,
    split_frontmatter,
    split_lines,
)
from reme_plugins.auto_memory.transcript import AutoMemoryError, Entry

if TYPE_CHECKING:
    from reme_core.api import Reme

_HEADING = re.compile(r"^## +(?P<text>.+?)[ \t#]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ITEM = re.compile(r"^(?:[-*+]|\d+[.)]) ")
_ANCHOR = re.compile(r"\[\[sessions/[^\]#|]+\.jsonl#L(\d+)(?:\|[^\]]*)?\]\]")

SECTIONS = ("facts", "timeline", "excerpt")


@dataclass(frozen=True)
class Labels:
    """The fixed texts a note carries, in the configured language."""

    facts: str
    timeline: str
    excerpt: str
    banner: str

    @classmethod
    def from_prompts(cls, prompts: Prompts) -> Labels:
        return cls(
            facts=prompts.render("heading_facts").strip(),
            timeline=prompts.render("heading_timeline").strip(),
            excerpt=prompts.render("heading_excerpt").strip(),
            # A blank line after the banner, so the first item does not join the callout.
            banner=prompts.render("excerpt_banner").rstrip("\n") + "\n\n",
        )

    def heading(self, section: str) -> str:
        return f"## {getattr(self, section)}\n"


@cache
def known_headings(package: str = "reme_plugins", name: str = "auto_memory") -> dict[str, set[str]]:
    """Each section's heading in every language the prompt file has (casefolded)."""
    known: dict[str, set[str]] = {section: set() for section in SECTIONS}
    for language in PROMPT_LANGUAGES:
        try:
            labels = Labels.from_prompts(load_prompts(package, name, language))
        except RemeError:
            continue
        for section in SECTIONS:
            known[section].add(getattr(labels, section).casefold())
    return known


def anchor(source: str, line: int) -> str:
    """A wikilink to one transcript line: ``[[sessions/s1.jsonl#L12]]``."""
    return f"[[{source}#L{line}]]"


def anchored_lines(text: str) -> set[int]:
    """Transcript line numbers a piece of Markdown links to."""
    return {int(m.group(1)) for m in _ANCHOR.finditer(text)}


def one_line(text: str) -> str:
    """Model text for a list item: whitespace collapsed, so it cannot start a heading or a list."""
    return " ".join(text.split())


def paragraphs(text: str) -> str:
    """Model text for the summary: kept as paragraphs, but no line may open a heading or a fence."""
    lines = []
    for line in text.strip().splitlines():
        stripped = line.strip()
        if stripped.startswith(("#", "```", "~~~", "---")):
            stripped = "\\" + stripped
        lines.append(stripped)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines))


def quote_block(text: str, indent: str = "  ") -> list[str]:
    return [f"{indent}> {line}".rstrip() + "\n" for line in text.split("\n")]


@dataclass
class Section:
    key: str | None
    """``facts``, ``timeline``, ``excerpt``, or None for a section the code does not own."""
    heading: str
    lines: list[str] = field(default_factory=list)


@dataclass
class NoteBody:
    """A note body split at its ``## `` headings (headings inside code fences do not count)."""

    head: list[str]
    sections: list[Section]
    labels: Labels

    @classmethod
    def parse(cls, text: str, labels: Labels, known: dict[str, set[str]]) -> NoteBody:
        head: list[str] = []
        sections: list[Section] = []
        fence: str | None = None
        for line in split_lines(text):
            opened = _FENCE.match(line)
            if fence is None and opened:
                fence = opened.group(1)
            elif fence is not None and opened and line.strip().startswith(fence):
                fence = None
            elif fence is None and (match := _HEADING.match(line.rstrip("\n"))):
                title = match.group("text").strip().casefold()
                key = next((k for k in SECTIONS if title in known[k]), None)
                sections.append(Section(key, line if line.endswith("\n") else line + "\n"))
                continue
            (sections[-1].lines if sections else head).append(line)
        return cls(head, sections, labels)

    @classmethod
    def new(cls, title: str, labels: Labels) -> NoteBody:
        # The blank first line separates the title from the frontmatter block.
        return cls(["\n", f"# {one_line(title)}\n", "\n"], [], labels)

    def render(self) -> str:
        parts = ["".join(self.head)]
        for section in self.sections:
            text = parts[-1]
            if text and not text.endswith("\n"):
                parts[-1] = text + "\n"
            if parts[-1] and not parts[-1].endswith("\n\n"):
                parts[-1] += "\n"
            parts.append(section.heading + "".join(section.lines))
        return "".join(parts).rstrip("\n") + "\n"

    # -- sections -----------------------------------------------------------------------------

    def section(self, key: str) -> Section | None:
        return next((s for s in self.sections if s.key == key), None)

    def ensure(self, key: str) -> Section:
        """The section ``key``, added in the canonical place (facts, timeline, excerpt)."""
        found = self.section(key)
        if found is not None:
            return found
        created = Section(key, self.labels.heading(key), ["\n"])
        later = SECTIONS[SECTIONS.index(key) + 1 :]
        index = next((i for i, s in enumerate(self.sections) if s.key in later), len(self.sections))
        self.sections.insert(index, created)
        return created

    def drop(self, key: str) -> None:
        self.sections = [s for s in self.sections if s.key != key]

    # -- head: title and summary --------------------------------------------------------------

    def set_head(self, title: str, summary: str) -> None:
        """Title line from the note's name; the summary replaces the text under it when given."""
        title_line = f"# {one_line(title)}\n"
        index = next((i for i, line in enumerate(self.head) if line.startswith("# ")), None)
        if index is None:
            self.head[:0] = [title_line, "\n"]
            index = 0
        else:
            self.head[index] = title_line
        if summary.strip():
            self.head[index + 1 :] = ["\n", paragraphs(summary) + "\n", "\n"]

    # -- facts ----------------------------------------------------------------------------------

    def facts(self) -> list[str]:
        section = self.section("facts")
        return [] if section is None else _items(section.lines)[1]

    def set_facts(self, items: list[str]) -> None:
        """Replace the fact items; text before the first item (a person's lead-in) stays."""
        if not items and self.section("facts") is None:
            return
        section = self.ensure("facts")
        lead = "".join(_items(section.lines)[0]).strip("\n")
        lines = ["\n", *([lead + "\n", "\n"] if lead else [])]
        lines += [item.rstrip("\n") + "\n" for item in items]
        section.lines = [*lines, "\n"] if items else lines

    # -- append-only sections -------------------------------------------------------------------

    def append(self, key: str, lines: list[str], banner: str = "") -> None:
        """Add ``lines`` after the last non-blank line of section ``key``; nothing else moves."""
        if not lines:
            return
        section = self.section(key)
        if section is None:
            section = self.ensure(key)
            section.lines = ["\n", banner, "\n"] if banner else ["\n"]
        body = section.lines
        last = max((i for i, line in enumerate(body) if line.strip()), default=None)
        if last is None:
            section.lines = [*body, *lines, "\n"]
            return
        if not body[last].endswith("\n"):
            body[last] += "\n"
        section.lines = body[: last + 1] + lines + (body[last + 1 :] or ["\n"])

    def anchored(self, key: str) -> set[int]:
        section = self.section(key)
        return set() if section is None else anchored_lines("".join(section.lines))

    def timeline_text(self) -> str:
        section = self.section("timeline")
        return "" if section is None else "".join(section.lines)


def _items(lines: list[str]) -> tuple[list[str], list[str]]:
    """A list section's lead text and its top-level items (each with its continuation lines)."""
    lead: list[str] = []
    items: list[str] = []
    for line in lines:
        if _ITEM.match(line):
            items.append(line)
        elif items:
            items[-1] += line
        else:
            lead.append(line)
    return lead, [item.rstrip("\n") + "\n" for item in items if item.strip()]


# -- items the code writes ------------------------------------------------------------------------


def fact_item(text: str, quote: str, lines: list[int], source: str) -> str:
    links = " ".join(anchor(source, n) for n in lines[:3])
    head = f"- {one_line(text)}" + (f" ({links})" if links else "")
    return head + "\n" + "".join(quote_block(quote.strip())) if quote.strip() else head + "\n"


def timeline_item(text: str, entry: Entry, source: str, tz: dt.tzinfo) -> str:
    time = f"{entry.timestamp.astimezone(tz):%H:%M} " if entry.timestamp is not None else ""
    return f"- {time}{one_line(text)} ({anchor(source, entry.line)})\n"


def excerpt_item(entry: Entry, source: str, tz: dt.tzinfo, max_chars: int) -> list[str]:
    time = f" {entry.timestamp.astimezone(tz):%H:%M}" if entry.timestamp is not None else ""
    text = entry.content.strip()
    if len(text) > max_chars:
        text = text[:max_chars].rstrip() + " …"
    return [f"- **{entry.role}**{time} {anchor(source, entry.line)}\n", *quote_block(text)]


# -- reading, finding and naming notes -----------------------------------------------------------


@dataclass
class NoteState:
    """A note as read from disk."""

    path: str
    text: str
    hash: str
    front: dict[str, Any]
    head: str
    """The frontmatter block, byte for byte (edited only through ``update_frontmatter``)."""
    body: NoteBody


def read_note(reme: Reme, path: str | None, labels: Labels) -> NoteState | None:
    """The note at ``path``, or None when there is none."""
    if not path:
        return None
    _, absolute = reme.paths.resolve(path)
    try:
        data = absolute.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise AutoMemoryError(f"cannot read {path}: {exc.strerror}") from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise AutoMemoryError(f"{path} is not UTF-8 text") from exc
    block = split_frontmatter(text, path)
    head = text[: block.body_start] if block else ""
    front, _ = parse_frontmatter(text, path)
    body = NoteBody.parse(text[len(head) :], labels, known_headings())
    return NoteState(path, text, content_hash(data), front, head, body)


def find_session_note(reme: Reme, date: dt.date, session_id: str) -> str | None:
    """The note in ``daily/<date>/`` whose frontmatter ``session_id`` is this session."""
    folder = reme.root / "daily" / date.isoformat()
    try:
        names = sorted(e.name for e in os.scandir(folder) if e.is_file())
    except OSError:
        return None
    for name in names:
        if not name.endswith(".md") or name.startswith("."):
            continue
        try:
            text = (folder / name).read_text(encoding="utf-8")
            front, _ = parse_frontmatter(text)
        except (OSError, UnicodeDecodeError, RemeError):
            continue
        if str(front.get("session_id", "")) == session_id:
            return f"daily/{date.isoformat()}/{name}"
    return None


def slug(text: str, limit: int = 60) -> str:
    """A readable file-name stem: lowercase words joined by '-', letters of any script kept."""
    text = unicodedata.normalize("NFKC", text).casefold()
    words = re.findall(r"\w+", text)
    out = "-".join(w.strip("_") for w in words if w.strip("_"))
    return out[:limit].rstrip("-")


def new_note_path(reme: Reme, date: dt.date, stem: str) -> str:
    """``daily/<date>/session-<stem>.md``, numbered when that name is taken."""
    base = f"daily/{date.isoformat()}/session-{stem or 'note'}"
    path, n = f"{base}.md", 2
    while os.path.lexists(reme.root / path):
        path, n = f"{base}-{n}.md", n + 1
    return path
