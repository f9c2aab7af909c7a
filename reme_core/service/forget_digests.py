"""What other notes learned from a purged note: the lines that cite it, and (asked for) the
digest notes unlinked from it.

A purge lists every note that links to a purged note, with each citing line. With
``with_digests`` the digest notes among them (``digest/``: what dream wrote) lose those links, as
one history entry of their own: a line that holds nothing but the link (a ``## Sources`` entry,
a ``> note: contradicted by [[...]]`` annotation) is removed; in any other line the link becomes
``a forgotten note``, and the line is kept and reported. Which of a node's sentences came from
which source is not recorded (dream keeps its sources per node, not per line), so code cannot
tell a sentence learned only from the purged note from one its other sources also support: those
lines stay for a person to judge (``kept``). Notes outside ``digest/`` are a person's own
writing: they are listed, never edited.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field, PrivateAttr

from reme_core.errors import WorkspaceError
from reme_core.runtime import Reme
from reme_core.workspace.history import HistoryError
from reme_core.workspace.wikilinks import parse_links

DIGEST_DIR = "digest/"
REPLACEMENT = "a forgotten note"
_ONLY_CITATION = re.compile(r"^[\s>*+\-\d.()\[\],;:]*(note:\s*contradicted by)?[\s,;.:]*$", re.I)
"""What is left of a line that only cited the note: list or quote marks, punctuation, and at
most the words of dream's contradiction annotation."""


class CitingLine(BaseModel):
    line: int
    text: str


class Citations(BaseModel):
    """The notes that cite a purged note, and what ``with_digests`` did to them."""

    citing: dict[str, list[CitingLine]] = Field(default_factory=dict)
    """Note -> its lines linking to a purged note (as they were before the purge)."""
    unlinked: list[str] = Field(default_factory=list)
    """Digest notes whose links to it were removed (``with_digests``)."""
    lines_removed: int = 0
    """Lines that held nothing but such a link."""
    kept: dict[str, list[CitingLine]] = Field(default_factory=dict)
    """Digest note -> the lines left with ``a forgotten note`` in place of the link (their text
    may still hold what was learned from it: judge them)."""
    history: str | None = None
    history_error: str | None = None
    _raws: dict[str, set[str]] = PrivateAttr(default_factory=dict)
    """Note -> the link targets, as written there, that resolved to a purged note."""


def citations(reme: Reme, paths: list[str]) -> Citations:
    """Every other note linking to one of ``paths``, with its citing lines."""
    names = set(paths)
    raws: dict[str, set[str]] = {}
    if reme.graph is not None:
        for rel in paths:
            for link in reme.graph.inbound(rel):
                if link.source not in names:
                    raws.setdefault(link.source, set()).add(link.raw)
        # A link to a file that is not a note (an image, as a resource note embeds it) never
        # resolves in the graph: it is found by the path it spells.
        files = {rel for rel in names if not rel.lower().endswith(".md")}
        for link in reme.graph.unresolved() if files else []:
            if link.source not in names and link.raw.strip().lstrip("/") in files:
                raws.setdefault(link.source, set()).add(link.raw)
    found = Citations()
    found._raws = raws
    for source in sorted(raws):
        lines = _citing(reme, source, raws[source])
        if lines:
            found.citing[source] = lines
    return found


def unlink_digests(reme: Reme, found: Citations, paths: list[str]) -> None:
    """Remove the links to ``paths`` from the digest notes in ``found`` (see the module doc), as
    one history entry (made after the history is rewritten, so its id stays valid); fills ``found``'s ``unlinked``, ``lines_removed``, ``kept``, ``history``."""
    names = set(paths)
    digests = [rel for rel in found.citing if rel.startswith(DIGEST_DIR)]
    if not digests:
        return
    with reme.history.batch():
        try:
            reme.history.snapshot()  # earlier changes stay out of this entry
        except HistoryError as exc:
            found.history_error = str(exc)
        for rel in digests:
            text = _text(reme, rel)
            if text is None:
                continue
            new, removed, kept = _unlinked(text, found._raws.get(rel, set()))
            if new == text:
                continue
            reme.files.write(rel, new)
            found.unlinked.append(rel)
            found.lines_removed += removed
            if kept:
                found.kept[rel] = kept
        if found.unlinked and found.history_error is None:
            # The message names the digests only: the purged notes' names leave the history.
            message = (
                f"reme forget --purge: unlinked {len(found.unlinked)} digest note(s) from "
                f"{len(names)} purged note(s)\n\n" + "\n".join(found.unlinked)
            )
            try:
                found.history = reme.history.record(message)
            except HistoryError as exc:
                found.history_error = str(exc)


def _citing(reme: Reme, source: str, raws: set[str]) -> list[CitingLine]:
    text = _text(reme, source)
    if text is None:  # a note that cannot be read is not listed
        return []
    lines = text.split("\n")
    numbers = sorted({link.line for link in parse_links(text) if link.raw in raws})
    return [CitingLine(line=n, text=lines[n - 1]) for n in numbers if n <= len(lines)]


def _text(reme: Reme, rel: str) -> str | None:
    try:
        return reme.paths.resolve(rel)[1].read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, WorkspaceError):
        return None


def _unlinked(text: str, raws: set[str]) -> tuple[str, int, list[CitingLine]]:
    """``text`` without its links to ``raws``: (new text, lines removed, lines kept)."""
    links = [link for link in parse_links(text) if link.raw in raws]
    if not links:
        return text, 0, []
    out = text
    for link in sorted(links, key=lambda item: item.start, reverse=True):
        out = out[: link.start] + "\x00" + out[link.end :]
    lines = out.split("\n")
    touched = {link.line for link in links}
    kept_lines: list[str] = []
    kept: list[CitingLine] = []
    removed = 0
    for number, line in enumerate(lines, start=1):
        if number in touched and _ONLY_CITATION.match(line.replace("\x00", "")):
            removed += 1
            continue
        if number in touched:
            line = re.sub(r" {2,}", " ", line.replace("\x00", REPLACEMENT))
            kept.append(CitingLine(line=len(kept_lines) + 1, text=line))
        kept_lines.append(line)
    return "\n".join(kept_lines), removed, kept
