"""A pending proposal whose target was superseded since it was made.

Dream's CORRECT and a memory update keep the note's path for the current statement and write
the statement as it was beside it (``<note>-v<N>.md``, ``status: superseded``,
``superseded_by: [[<note>]]``, ``superseded_on``). A proposal made before that is based on what
is now the copy: approving it would overwrite the newer statement, so approval refuses it as
stale, and the listing says so beforehand, naming the copy its base now lives in
(``base_kept_as``): the newest copy holding every line the proposal's diff removes (bar the keys
that mark a copy), which is the statement the proposal was written against. A proposal whose target is itself a superseded copy names the note that
replaced it (``superseded_by``). Neither is re-pointed to the current note: its text was written
against the old statement, and applying it to the new one would silently undo the correction;
the pipeline proposes again from the current note (a stale dream unit is queued again).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from reme_core.index.catalog import Catalog

MARKING_KEYS = ("memory_id:", "status:", "superseded_by:", "superseded_on:", "contradicted_by:")
"""Frontmatter lines a superseded copy rewrites: not compared."""


def _linked(value: object) -> str | None:
    if isinstance(value, list):
        value = value[0] if value else None
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    if text.startswith("[[") and text.endswith("]]"):
        text = text[2:-2].split("|", 1)[0].split("#", 1)[0].strip()
    return text if text.lower().endswith(".md") else text + ".md"


def replaced_by(catalog: Catalog, target: str) -> str | None:
    """The note that replaced ``target`` when ``target`` is itself superseded; else None."""
    note = catalog.note(target)
    if note is None or note.status != "superseded":
        return None
    return _linked(note.frontmatter.get("superseded_by"))


def removed_lines(diff: str) -> list[str]:
    """The lines a unified diff removes from the text it was made against."""
    return [
        line[1:]
        for line in diff.splitlines()
        if line.startswith("-") and not line.startswith("---")
    ]


def kept_since(
    catalog: Catalog, target: str, diff: str, read: Callable[[str], str | None]
) -> str | None:
    """The newest superseded copy of ``target`` that holds every line ``diff`` removes: the
    version the proposal was based on, now kept beside it (None: no such copy)."""
    wanted = [ln for ln in removed_lines(diff) if not ln.lstrip().startswith(MARKING_KEYS)]
    stem = target[:-3] if target.lower().endswith(".md") else target
    copy = re.compile(re.escape(stem) + r"-v(\d+)\.md\Z")
    numbered = {p: int(m.group(1)) for p in catalog.paths() if (m := copy.match(p))}
    if not numbered:
        return None
    found = None
    for path, note in catalog.notes(numbered).items():
        if note.status != "superseded" or _linked(note.frontmatter.get("superseded_by")) != target:
            continue
        text = read(path)
        if text is None or not set(wanted) <= set(text.splitlines()):
            continue  # another version than the one the proposal was written against
        if found is None or numbered[path] > numbered[found]:
            found = path
    return found
