"""A memory record as a Markdown note, and back.

The frontmatter is authoritative (``memory_id``, ``memory_type``, the scope key,
``when_to_use``, ``metadata``, ``created``, ``updated``, ``sources``). The body is the content,
followed by two generated sections a reader (and the keyword index, which does not read
frontmatter) can see::

    Prefers 4-space indentation in Python.

    ## When to use

    Formatting code for Alice.

    ## Sources

    - [[sessions/s1.jsonl]]

Links that dream (or a person) adds under ``## Sources`` count as sources too. Frontmatter keys
this module does not manage (``tags``, ``status``, a reviewer's note) survive every rewrite.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from typing import Any

from reme_core.errors import RemeError, WorkspaceError
from reme_core.memory.models import (
    MEMORY_ID,
    SCOPE_KEYS,
    MemoryRecord,
    MemoryScope,
)
from reme_core.workspace.frontmatter import dump_note
from reme_core.workspace.notes import parse_note
from reme_core.workspace.wikilinks import parse_links

WHEN_HEADING = "## When to use"
SOURCES_HEADING = "## Sources"
_MARKER = re.compile(r"^[ \t]*##[ \t]+(when to use|sources)[ \t]*#*[ \t]*$", re.IGNORECASE)
MANAGED_KEYS = (
    "name",
    "description",
    "memory_id",
    "memory_type",
    *SCOPE_KEYS.values(),
    "when_to_use",
    "metadata",
    "created",
    "updated",
    "sources",
)
TITLE_CHARS = 80
MAX_CONTENT_CHARS = 20_000
MAX_SOURCE_CHARS = 300


class NotARecord(RemeError):
    """A note in a memory folder that is not (or no longer) a readable memory record."""


def clean_content(content: str) -> str:
    """The content as stored; refuses what the note format could not give back unchanged."""
    if not isinstance(content, str) or not content.strip():
        raise WorkspaceError("memory content is empty: give the text to remember")
    if "\0" in content:
        raise WorkspaceError("memory content contains NUL bytes")
    if len(content) > MAX_CONTENT_CHARS:
        raise WorkspaceError(f"memory content is over {MAX_CONTENT_CHARS} characters")
    for line in content.splitlines():
        if _MARKER.match(line):
            # The body's own sections start at these headings, so content must not hold one.
            raise WorkspaceError(
                f"memory content may not contain the heading {line.strip()!r}: "
                "give when_to_use and sources as their own fields"
            )
    return content.strip("\n").rstrip()


def clean_text(value: str | None, what: str) -> str:
    """A one-paragraph field (``when_to_use``): stripped, without marker headings."""
    text = (value or "").strip()
    if any(_MARKER.match(line) for line in text.splitlines()):
        raise WorkspaceError(f"{what} may not contain a '## When to use' or '## Sources' heading")
    return text


def clean_sources(sources: Iterable[str]) -> list[str]:
    """Link targets without their brackets, unique, in the order given."""
    out: list[str] = []
    for raw in sources:
        if not isinstance(raw, str):
            raise WorkspaceError(f"a source must be text, not {type(raw).__name__}")
        target = raw.strip()
        if target.startswith("[[") and target.endswith("]]"):
            target = target[2:-2].strip()
        if not target:
            continue
        if len(target) > MAX_SOURCE_CHARS or any(c in target for c in "[]\n\r\0"):
            raise WorkspaceError(
                f"source {raw!r} is not a link target: one line, no brackets, "
                f"at most {MAX_SOURCE_CHARS} characters (e.g. sessions/s1.jsonl)"
            )
        if target not in out:
            out.append(target)
    return out


def iso(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).replace(microsecond=0).isoformat()


def title(content: str) -> str:
    """The note's ``name``: the content's first line without Markdown markers, cut short."""
    first = next((line for line in content.splitlines() if line.strip()), content)
    first = re.sub(r"^[#>*\-\s]+", "", first).strip() or first.strip()
    return first if len(first) <= TITLE_CHARS else first[: TITLE_CHARS - 3].rstrip() + "..."


def render(
    *,
    memory_id: str,
    scope: MemoryScope,
    content: str,
    when_to_use: str,
    metadata: dict[str, Any],
    created: dt.datetime,
    updated: dt.datetime,
    sources: list[str],
    keep: dict[str, Any] | None = None,
) -> str:
    """The note text; ``keep`` is the current frontmatter, whose other keys stay as they are."""
    managed: dict[str, Any] = {
        "name": title(content),
        "description": when_to_use or None,
        "memory_id": memory_id,
        "memory_type": scope.memory_type,
        scope.key: scope.value,
        "when_to_use": when_to_use,
        "metadata": metadata or None,
        "created": iso(created),
        "updated": iso(updated),
        "sources": sources or None,
    }
    front = {k: v for k, v in managed.items() if v is not None}
    for key, value in (keep or {}).items():
        if key not in MANAGED_KEYS:
            front[key] = value
    body = content + "\n"
    if when_to_use:
        body += f"\n{WHEN_HEADING}\n\n{when_to_use}\n"
    if sources:
        body += f"\n{SOURCES_HEADING}\n\n" + "".join(f"- [[{s}]]\n" for s in sources)
    return dump_note(front, body)


def parse(path: str, text: str, content_hash: str) -> MemoryRecord:
    """The record a note holds; NotARecord with the reason when it holds none."""
    try:
        note = parse_note(path, text)
    except RemeError as exc:
        raise NotARecord(str(exc)) from None
    fm = note.frontmatter
    memory_id = fm.get("memory_id")
    if not isinstance(memory_id, str) or not MEMORY_ID.match(memory_id):
        raise NotARecord("no valid memory_id in its frontmatter")
    kind = fm.get("memory_type")
    if kind not in SCOPE_KEYS:
        raise NotARecord(f"memory_type {kind!r} is not one of {', '.join(SCOPE_KEYS)}")
    key = SCOPE_KEYS[kind]
    name = fm.get(key)
    if not isinstance(name, str) or not name.strip():
        raise NotARecord(f"a {kind} memory needs {key} in its frontmatter")
    created = _moment(fm.get("created"), "created")
    if created is None:
        raise NotARecord("no created timestamp in its frontmatter")
    updated = _moment(fm.get("updated"), "updated") or created
    metadata = fm.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise NotARecord("metadata must be a mapping")
    listed = fm.get("sources") or []
    if not isinstance(listed, list):
        raise NotARecord("sources must be a list")
    content, linked = split_body(note.body)
    when = fm.get("when_to_use")
    try:
        sources = clean_sources([*map(str, listed), *linked])
    except WorkspaceError as exc:
        raise NotARecord(str(exc)) from None
    return MemoryRecord(
        memory_id=memory_id,
        memory_type=kind,
        **{key: name.strip()},
        content=content,
        when_to_use="" if when is None else str(when).strip(),
        metadata={str(k): v for k, v in metadata.items()},
        created=created,
        updated=updated,
        sources=sources,
        status=note.status,
        superseded_by=_newer(fm.get("superseded_by")) if note.status == "superseded" else None,
        path=path,
        content_hash=content_hash,
    )


def split_body(body: str) -> tuple[str, list[str]]:
    """The content (before the first generated section) and the links under ``## Sources``."""
    lines = body.splitlines()
    cut = next((i for i, line in enumerate(lines) if _MARKER.match(line)), len(lines))
    content = "\n".join(lines[:cut]).strip("\n").rstrip()
    linked: list[str] = []
    in_sources = False
    for line in lines[cut:]:
        marker = _MARKER.match(line)
        if marker:
            in_sources = marker.group(1).lower() == "sources"
        elif line.lstrip().startswith("#"):
            in_sources = False  # another heading ends the section
        elif in_sources:
            linked += [link.raw for link in parse_links(line)]
    return content, linked


def _newer(value: Any) -> str | None:
    """The memory id a superseded record names as its newer version: the last part of its
    ``superseded_by`` link (``[[digest/personal/alice/<id>]]``), since a record's file is named
    by its id; the link as written when it names no valid id."""
    if isinstance(value, list):  # superseded_by: ["[[a]]"] names the first, as search does
        value = value[0] if value else None
    if not isinstance(value, str) or not value.strip():
        return None
    target = value.strip().removeprefix("[[").removesuffix("]]").split("|")[0].split("#")[0]
    stem = target.strip().rsplit("/", 1)[-1].removesuffix(".md")
    return stem if MEMORY_ID.match(stem) else value.strip()


def _moment(value: Any, key: str) -> dt.datetime | None:
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        moment = value
    elif isinstance(value, dt.date):
        moment = dt.datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        try:
            moment = dt.datetime.fromisoformat(value.strip())
        except ValueError:
            raise NotARecord(f"{key} {value!r} is not an ISO 8601 timestamp") from None
    else:
        raise NotARecord(f"{key} must be a timestamp, not {type(value).__name__}")
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=dt.UTC)
