"""Reading and writing record notes, with the scope checked on every read.

Writes go through the workspace's file tools, so they are atomic, journalled and indexed before
they return. Reads parse the note itself (never the index alone) and keep a record only when its
own frontmatter names the scope asked for: a folder or a search hit is a hint, not a proof.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reme_core.errors import ConflictError, NotFoundError, UnsupportedFileError, WorkspaceError
from reme_core.memory import note
from reme_core.memory.layout import record_path, scope_folder
from reme_core.memory.models import MEMORY_ID, MemoryRecord, MemoryScope
from reme_core.memory.note import NotARecord
from reme_core.workspace.hashing import content_hash
from reme_core.workspace.notes import parse_note
from reme_core.workspace.results import DeleteResult, WriteResult

if TYPE_CHECKING:
    from reme_core.runtime import Reme


MAX_VERSIONS = 1000
"""A record updated more often than this is a loop, not a history."""


@dataclass(frozen=True)
class Loaded:
    """A record and the note's whole frontmatter (its other keys survive a rewrite)."""

    record: MemoryRecord
    frontmatter: dict[str, Any]
    text: str = ""
    """The note as read (a superseded copy keeps it byte for byte, bar its frontmatter)."""


def belongs(record: MemoryRecord, scope: MemoryScope) -> bool:
    return record.memory_type == scope.memory_type and getattr(record, scope.key) == scope.value


class MemoryStore:
    def __init__(self, reme: Reme):
        self.reme = reme

    # -- reads -------------------------------------------------------------------------------

    def load(self, rel: str) -> Loaded:
        """The record in note ``rel``: NotFoundError if it is gone, NotARecord if it holds none."""
        rel, absolute = self.reme.paths.resolve(rel)
        if not absolute.is_file():
            raise NotFoundError(f"{rel} does not exist")
        size = absolute.stat().st_size
        if size > self.reme.files.max_file_bytes:
            raise NotARecord(f"{size} bytes, over the limit for notes")
        data = absolute.read_bytes()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise NotARecord("not UTF-8 text") from None
        record = note.parse(rel, text, content_hash(data))
        return Loaded(record, parse_note(rel, text).frontmatter, text)

    def scoped(self, rel: str, scope: MemoryScope) -> Loaded | None:
        """The record in ``rel`` if it is one of ``scope``'s; None otherwise (whatever the
        reason: another scope's records are not this caller's business)."""
        try:
            loaded = self.load(rel)
        except (NotARecord, WorkspaceError, OSError):
            return None
        return loaded if belongs(loaded.record, scope) else None

    def records(self, scope: MemoryScope) -> tuple[list[Loaded], dict[str, str]]:
        """Every record of ``scope`` (in path order), and the notes of its folder that are no
        record, with the reason. Records of other scopes sharing the folder are left out."""
        found: list[Loaded] = []
        problems: dict[str, str] = {}
        for rel in self._notes(scope_folder(scope)):
            try:
                loaded = self.load(rel)
            except NotARecord as exc:
                problems[rel] = str(exc)
                continue
            except (WorkspaceError, OSError):
                continue  # gone since the folder was listed
            if belongs(loaded.record, scope):
                found.append(loaded)
        return found, problems

    def find(self, scope: MemoryScope, memory_id: str) -> Loaded:
        """Record ``memory_id`` of ``scope``: at its own path, else anywhere in the scope's folder
        (a person may have renamed the note). NotFoundError when the scope has no such record."""
        direct = self.scoped(record_path(scope, memory_id), scope)
        if direct is not None and direct.record.memory_id == memory_id:
            return direct
        for loaded in self.records(scope)[0]:
            if loaded.record.memory_id == memory_id:
                return loaded
        raise NotFoundError(f"no memory {memory_id!r} for {scope.describe()}")

    def free_version(self, scope: MemoryScope, memory_id: str) -> str:
        """The first ``<id>-v<N>`` that is neither a note in the scope's folder nor the id of one
        of its records: the id a superseded copy of ``memory_id`` is kept under, so it is a
        record of its own and never a second record with the current one's id."""
        taken = {loaded.record.memory_id for loaded in self.records(scope)[0]}
        for number in range(1, MAX_VERSIONS + 1):
            candidate = f"{memory_id}-v{number}"
            if not MEMORY_ID.match(candidate):
                raise WorkspaceError(
                    f"memory id {memory_id!r} is too long to keep a superseded version beside it "
                    "(ids are at most 64 characters): add the new statement as a new memory"
                )
            exists = self.reme.paths.resolve(record_path(scope, candidate))[1].exists()
            if candidate not in taken and not exists:
                return candidate
        raise WorkspaceError(f"memory {memory_id!r} has {MAX_VERSIONS} superseded versions already")

    def _notes(self, folder: str) -> list[str]:
        """Markdown files under ``folder``, sorted; hidden entries and symbolic links skipped."""
        _, absolute = self.reme.paths.resolve(folder)
        if not absolute.is_dir() or absolute.is_symlink():
            return []
        out: list[str] = []
        for current, dirs, files in os.walk(absolute):
            dirs[:] = sorted(
                d for d in dirs if not d.startswith(".") and not os.path.islink(Path(current, d))
            )
            base = Path(current).relative_to(self.reme.root).as_posix()
            for name in sorted(files):
                path = Path(current, name)
                if name.startswith(".") or not name.endswith(".md") or path.is_symlink():
                    continue
                out.append(f"{base}/{name}")
        return out

    # -- writes ------------------------------------------------------------------------------

    def create(self, scope: MemoryScope, memory_id: str, text: str) -> MemoryRecord:
        written = self.reme.files.write(record_path(scope, memory_id), text, create_only=True)
        return self._written(written, text)

    def replace(self, current: MemoryRecord, text: str) -> MemoryRecord:
        # The hash read a moment ago guards the write: a hand edit in between is a conflict.
        written = self.reme.files.write(current.path, text, expected_hash=current.content_hash)
        return self._written(written, text)

    def remove(self, current: MemoryRecord) -> DeleteResult:
        return self.reme.files.delete(current.path, expected_hash=current.content_hash)

    @staticmethod
    def _written(written: WriteResult, text: str) -> MemoryRecord:
        try:
            return note.parse(written.path, text, written.content_hash)
        except NotARecord as exc:  # render and parse disagree: a bug, not the caller's input
            raise UnsupportedFileError(
                f"{written.path}: written record does not read back: {exc}"
            ) from None


def check_expected(record: MemoryRecord, expected_hash: str | None) -> None:
    """The caller's ``expected_hash`` (from an earlier read) must still be the note's hash."""
    if expected_hash is not None and expected_hash != record.content_hash:
        raise ConflictError(
            f"memory {record.memory_id} changed since it was read (expected hash "
            f"{expected_hash[:12]}..., found {record.content_hash[:12]}...); get it again"
        )
