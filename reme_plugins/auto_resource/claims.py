"""Which note belongs to which resource, discovered from the notes' own frontmatter.

A resource note names its file in ``source_resource`` (``"[[resource/x.pdf]]"``) and the bytes
it summarised in ``resource_hash``. Reading that back instead of keeping a record in ``.reme/``
means the mapping survives a rebuilt ``.reme/``, a note moved to another folder, or a restore
from history, and a file whose note was never written is simply still pending.
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reme_core.api import Catalog, RemeError, parse_frontmatter

RESOURCE_DIR = "resource"
ARCHIVED_PREFIX = "source "
"""How reasons written by this step begin (``source resource/x.pdf deleted on ...``), so a note
archived because its file went away comes back when the file does, and one a person archived
stays archived."""


@dataclass(frozen=True)
class Claim:
    """An existing note that summarises resource ``source``."""

    note: str
    source: str
    resource_hash: str | None
    status: str
    archived_reason: str | None
    summarised: bool | None = None
    """False on an image note written without a vision model: a run with one completes it."""

    @property
    def archived_by_us(self) -> bool:
        return self.status == "archived" and str(self.archived_reason or "").startswith(
            ARCHIVED_PREFIX
        )


def source_of(value: Any) -> str | None:
    """The resource path in a ``source_resource`` value (``[[path|alias]]`` or a bare path)."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    if text.startswith("[[") and text.endswith("]]"):
        text = text[2:-2]
    text = text.split("|", 1)[0].split("#", 1)[0].strip().strip("/")
    return text if text.startswith(RESOURCE_DIR + "/") else None


def find_claims(catalog: Catalog) -> dict[str, Claim]:
    """Resource path -> the note that summarises it.

    When several notes name one resource (a copied note), the active one wins, then the first
    by path, so the choice is the same every run.
    """
    paths = [
        p
        for p in catalog.hashes()
        if p.lower().endswith(".md") and not p.startswith(RESOURCE_DIR + "/")
    ]
    claims: dict[str, Claim] = {}
    for path, summary in sorted(catalog.notes(paths).items()):
        fm = summary.frontmatter
        source = source_of(fm.get("source_resource"))
        if source is None:
            continue
        claim = Claim(
            note=path,
            source=source,
            resource_hash=str(fm["resource_hash"]) if fm.get("resource_hash") else None,
            status=summary.status,
            archived_reason=fm.get("archived_reason"),
            summarised=fm["summarised"] if isinstance(fm.get("summarised"), bool) else None,
        )
        held = claims.get(source)
        if held is None or (held.status != "active" and claim.status == "active"):
            claims[source] = claim
    return claims


def sources_going_with(root: Path, catalog: Catalog, notes: Set[str]) -> dict[str, str]:
    """The resource files that go with ``notes`` when they are purged: source -> the note. A
    purged resource note's file would get a note again on the next run, so it goes too; unless
    a note that stays names it as well (a copied note: that one keeps summarising it), or it is
    gone already. The notes are read from disk (one copied in may not be indexed yet)."""
    mine: dict[str, str] = {}
    for rel in sorted(notes):
        if not rel.lower().endswith(".md"):
            continue
        try:
            fm, _ = parse_frontmatter((root / rel).read_text(encoding="utf-8"), rel)
        except (OSError, UnicodeDecodeError, RemeError):
            continue  # not readable as a note: it names no source the purge could add
        source = source_of(fm.get("source_resource"))
        if source is not None and source not in notes and (root / source).is_file():
            mine.setdefault(source, rel)
    if not mine:
        return {}
    others = [p for p in catalog.hashes() if p.lower().endswith(".md") and p not in notes]
    for summary in catalog.notes(others).values():
        mine.pop(source_of(summary.frontmatter.get("source_resource")) or "", None)
    return mine
