"""A memory record's note text and fields: how one is made, rewritten and compared.

Shared by ``MemoryApi`` (which writes records) and the review queue's ``MemoryProposer`` and
``MemoryReviewer`` (which propose and verify them), so neither has to import the other.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable, Iterable
from typing import Any

import yaml
from pydantic import ValidationError

from reme_core.errors import FrontmatterError, WorkspaceError
from reme_core.memory import note
from reme_core.memory.models import MemoryRecord, MemoryScope, ToolMetadata
from reme_core.memory.store import Loaded
from reme_core.workspace.frontmatter import update_frontmatter

Clock = Callable[[], dt.datetime]


def new_record(scope: MemoryScope, now: dt.datetime, **fields: Any) -> tuple[str, str]:
    """A new record's id and note text."""
    memory_id = uuid.uuid4().hex[:12]
    text = note.render(memory_id=memory_id, scope=scope, created=now, updated=now, **fields)
    return memory_id, text


def rewritten(current: Loaded, clock: Clock, **fields: Any) -> str | None:
    """The record's note text with ``fields``; None when they change nothing."""
    old = current.record
    if all(getattr(old, key) == value for key, value in fields.items()):
        return None
    return note.render(
        memory_id=old.memory_id,
        scope=old.scope,
        created=old.created,
        updated=clock(),
        keep=current.frontmatter,
        **fields,
    )


def superseded_copy(current: Loaded, copy_id: str, newer: str, today: dt.date) -> str:
    """The record's note as it is now, kept as record ``copy_id`` with ``status: superseded``
    and ``superseded_by: [[<newer>]]`` (the current record's path, which keeps meaning "the
    current statement"); the body and every other key stay as they were."""
    fields = {
        "memory_id": copy_id,
        "status": "superseded",
        "superseded_by": f"[[{newer.removesuffix('.md')}]]",
        "superseded_on": today.isoformat(),
    }
    try:
        return update_frontmatter(current.text, fields, path=current.record.path)
    except FrontmatterError as exc:  # it parsed a moment ago; kept as a clear refusal
        raise WorkspaceError(
            f"{current.record.path}: cannot keep the superseded statement: {exc}"
        ) from None


def record_fields(
    scope: MemoryScope,
    content: str,
    when_to_use: str | None,
    metadata: dict[str, Any],
    sources: Iterable[str],
) -> dict[str, Any]:
    """The validated, normalised fields of a record (WorkspaceError says what is wrong)."""
    return {
        "content": note.clean_content(content),
        "when_to_use": note.clean_text(when_to_use, "when_to_use"),
        "metadata": _metadata(scope, metadata),
        "sources": note.clean_sources(sources),
    }


def same_content(content: str) -> str:
    """Content compared for repeats: case and spacing do not make a memory new."""
    return " ".join(content.split()).casefold()


def _metadata(scope: MemoryScope, metadata: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(metadata, dict) or not all(isinstance(k, str) for k in metadata):
        raise WorkspaceError("metadata must be a mapping with text keys")
    if scope.memory_type == "tool":
        try:
            ToolMetadata.model_validate(metadata)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()
            )
            raise WorkspaceError(f"tool metadata: {problems}") from None
    try:
        yaml.safe_dump(metadata)
    except yaml.YAMLError:
        raise WorkspaceError(
            "metadata values must be text, numbers, booleans, null, or lists and mappings of those"
        ) from None
    return dict(metadata)


def check_current(record: MemoryRecord) -> None:
    """A superseded record is history: it is not updated (its newer version is)."""
    if record.status == "superseded":
        newer = f"memory {record.superseded_by!r}" if record.superseded_by else "a newer record"
        raise WorkspaceError(
            f"memory {record.memory_id} is superseded by {newer}: update that one instead"
        )
