"""File tools: the only way the API and inner agents read and change the workspace.

Every refusal happens before the disk is touched; every write is atomic, journalled, and
reported to ``on_change`` so the indexer sees it before the call returns. The read-only tools
and the confinement are in ``read_tools``, durable writes in ``atomic``, and the links a move
rewrites in ``link_rewrite``; ``FileTools`` here adds the tools that change files.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from reme_core.errors import (
    ConflictError,
    EditError,
    PathOutsideWorkspaceError,
    UnsupportedFileError,
    WorkspaceError,
)
from reme_core.workspace import frontmatter as fm
from reme_core.workspace.atomic import atomic_write, fsync_dir
from reme_core.workspace.hashing import content_hash
from reme_core.workspace.journal import Journal, JournalOp
from reme_core.workspace.layout import prune_empty_folders
from reme_core.workspace.link_rewrite import RewritePlan, plan_rewrites, scan_inbound
from reme_core.workspace.notes import parse_note
from reme_core.workspace.read_tools import (
    BINARY_SNIFF_BYTES,
    LS_MAX_ENTRIES,
    MAX_FILE_BYTES,
    TEXT_SUFFIXES,
    ReadTools,
    split_lines,
)
from reme_core.workspace.results import (
    DeleteResult,
    EditResult,
    FrontmatterResult,
    MoveResult,
    WriteResult,
)
from reme_core.workspace.wikilinks import LinkResolver, rewrite_links

# Callers (reme_plugins, the index seal, the scheduler, tests) import these from here.
__all__ = [
    "BINARY_SNIFF_BYTES",
    "LS_MAX_ENTRIES",
    "MAX_FILE_BYTES",
    "TEXT_SUFFIXES",
    "BeforeRemove",
    "FileTools",
    "InboundLookup",
    "OnChange",
    "atomic_write",
    "prune_empty_folders",
    "split_lines",
]

OnChange = Callable[[list[str], list[str]], None]
InboundLookup = Callable[[str], list[str]]
BeforeRemove = Callable[[str], None]
"""Called with a note about to be deleted or moved away, so its current text (edited outside
reme, say) can be kept first."""


class FileTools(ReadTools):
    """Confined, atomic, journalled file operations on one workspace."""

    def __init__(
        self,
        root: Path,
        *,
        journal: Journal,
        on_change: OnChange | None = None,
        before_remove: BeforeRemove | None = None,
        inbound_lookup: InboundLookup | None = None,
        allowed_paths: Sequence[str] | None = None,
        max_read_bytes: int = 51200,
        max_file_bytes: int = MAX_FILE_BYTES,
        actor: str = "api",
    ):
        super().__init__(
            root,
            allowed_paths=allowed_paths,
            max_read_bytes=max_read_bytes,
            max_file_bytes=max_file_bytes,
        )
        self.journal = journal
        self.on_change = on_change
        self.before_remove = before_remove
        self.inbound_lookup = inbound_lookup
        self.actor = actor
        self._lock = threading.RLock()

    # -- checks -----------------------------------------------------------------------------

    def _existing_hash(self, rel: str, absolute: Path) -> str | None:
        if not os.path.lexists(absolute):
            return None
        data, _ = self._load(rel, absolute)
        return content_hash(data)

    @staticmethod
    def _require_md(rel: str, tool: str) -> None:
        if not rel.lower().endswith(".md"):
            raise UnsupportedFileError(
                f"{tool} only changes Markdown notes (.md); {rel} is not one"
            )

    @staticmethod
    def _check_expected(rel: str, current: str | None, expected: str | None) -> None:
        if expected is None:
            return
        if current is None:
            raise ConflictError(
                f"{rel} does not exist, but expected_hash was given; omit it to create the file"
            )
        if current != expected:
            raise ConflictError(
                f"{rel} changed since it was read (expected hash {expected[:12]}..., found "
                f"{current[:12]}...); read it again and reapply the change"
            )

    def _validate_note(self, rel: str, text: str) -> bytes:
        if "\0" in text:
            raise UnsupportedFileError(f"content for {rel} contains NUL bytes; notes are text")
        data = text.encode("utf-8")
        if len(data) > self.max_file_bytes:
            raise UnsupportedFileError(
                f"content for {rel} is {len(data)} bytes, over the {self.max_file_bytes}-byte limit"
            )
        parse_note(rel, text)
        return data

    def _record(self, op: JournalOp, rel: str, **kw: Any) -> None:
        self.journal.record(op, rel, actor=self.actor, **kw)

    def _keep(self, rel: str) -> None:
        if self.before_remove is not None:
            self.before_remove(rel)

    def _notify(self, changed: list[str], removed: list[str]) -> None:
        if self.on_change is not None:
            self.on_change(changed, removed)

    # -- mutating tools ---------------------------------------------------------------------

    def write(
        self,
        path: str,
        content: str,
        expected_hash: str | None = None,
        *,
        create_only: bool = False,
    ) -> WriteResult:
        """Create or replace a Markdown note; ``expected_hash`` guards against lost updates and
        ``create_only`` makes an existing file a conflict (a new node must not replace one)."""
        rel, absolute = self._resolve(path, for_write=True)
        self._require_md(rel, "write")
        data = self._validate_note(rel, content)
        after = content_hash(data)
        with self._lock:
            if absolute.is_dir():
                raise WorkspaceError(f"{rel} is a folder; choose a file path ending in .md")
            before = self._existing_hash(rel, absolute)
            if create_only and (before is not None or os.path.lexists(absolute)):
                raise ConflictError(f"{rel} already exists; choose a new path")
            self._check_expected(rel, before, expected_hash)
            if before == after:
                return WriteResult(
                    path=rel, content_hash=after, before_hash=before, changed=False, size=len(data)
                )
            self._write_bytes(rel, absolute, data)
            self._record("write", rel, before_hash=before, after_hash=after)
            self._notify([rel], [])
        return WriteResult(
            path=rel,
            content_hash=after,
            before_hash=before,
            created=before is None,
            size=len(data),
        )

    def append_lines(
        self, path: str, lines: list[str], expected_hash: str | None = None
    ) -> WriteResult:
        """Append ``lines`` to a JSON Lines file (``.jsonl`` only), creating it if need be.

        Each line is one JSON value without a newline; the existing bytes are kept as they are
        (a torn last line is ended first, so it keeps its line number). The file is replaced
        atomically, so a reader sees it before or after, never half-appended. No lines is a
        no-op (``changed=False``); a line that is not one JSON value is refused.
        """
        rel, absolute = self._resolve(path, for_write=True)
        if not rel.lower().endswith(".jsonl"):
            raise UnsupportedFileError(
                f"append_lines only appends to JSON Lines files (.jsonl); {rel} is not one"
            )
        added = "".join(self._jsonl_line(rel, number, line) for number, line in enumerate(lines))
        with self._lock:
            if absolute.is_dir():
                raise WorkspaceError(f"{rel} is a folder; choose a file path ending in .jsonl")
            exists = os.path.lexists(absolute)
            data, text = self._load(rel, absolute) if exists else (b"", "")
            before = content_hash(data) if exists else None
            self._check_expected(rel, before, expected_hash)
            if added:
                if text and not text.endswith("\n"):
                    text += "\n"  # ends a torn last line, which keeps its number
                data = (text + added).encode("utf-8")
                if len(data) > self.max_file_bytes:
                    raise UnsupportedFileError(
                        f"appending to {rel} would make it {len(data)} bytes, over the "
                        f"{self.max_file_bytes}-byte limit for file tools"
                    )
            after = content_hash(data)
            if added:
                self._write_bytes(rel, absolute, data)
                self._record("write", rel, before_hash=before, after_hash=after)
                self._notify([rel], [])
        return WriteResult(
            path=rel,
            content_hash=after,
            before_hash=before,
            created=bool(added) and before is None,
            changed=bool(added),
            size=len(data),
        )

    @staticmethod
    def _jsonl_line(rel: str, index: int, line: str) -> str:
        where = f"line {index + 1} of the lines for {rel}"
        if "\n" in line or "\r" in line:
            raise UnsupportedFileError(f"{where} contains a line break; give one JSON value a line")
        try:
            json.loads(line)
        except ValueError as exc:
            raise UnsupportedFileError(f"{where} is not one JSON value: {exc}") from None
        return line + "\n"

    def edit(
        self,
        path: str,
        old: str,
        new: str,
        expected_count: int = 1,
        expected_hash: str | None = None,
    ) -> EditResult:
        """Replace exact text; the number of matches must equal ``expected_count``."""
        rel, absolute = self._resolve(path, for_write=True)
        self._require_md(rel, "edit")
        if not old:
            raise EditError("old text is empty; give the exact text to replace")
        if expected_count < 1:
            raise EditError(f"expected_count must be 1 or more, got {expected_count}")
        with self._lock:
            data, text = self._load(rel, absolute)
            before = content_hash(data)
            self._check_expected(rel, before, expected_hash)
            found = text.count(old)
            if found != expected_count:
                advice = (
                    "copy the text exactly as it appears (read the file first)"
                    if found == 0
                    else "include more surrounding text to make it unique, or set expected_count"
                )
                raise EditError(
                    f"{rel}: found {found} occurrence(s) of the text to replace, "
                    f"expected {expected_count}; {advice}"
                )
            new_data = self._validate_note(rel, text.replace(old, new))
            after = content_hash(new_data)
            self._write_bytes(rel, absolute, new_data)
            self._record("edit", rel, before_hash=before, after_hash=after)
            self._notify([rel], [])
        return EditResult(path=rel, content_hash=after, before_hash=before, replacements=found)

    def update_frontmatter(
        self,
        path: str,
        set: dict[str, Any],  # matches the API's field name
        remove: Sequence[str] = (),
        expected_hash: str | None = None,
    ) -> FrontmatterResult:
        """Set and remove frontmatter keys, leaving the rest of the note byte-identical."""
        rel, absolute = self._resolve(path, for_write=True)
        self._require_md(rel, "update_frontmatter")
        with self._lock:
            data, text = self._load(rel, absolute)
            before = content_hash(data)
            self._check_expected(rel, before, expected_hash)
            new_text = fm.update_frontmatter(text, dict(set), remove, path=rel)
            new_data = self._validate_note(rel, new_text)
            after = content_hash(new_data)
            changed = after != before
            if changed:
                self._write_bytes(rel, absolute, new_data)
                self._record("frontmatter", rel, before_hash=before, after_hash=after)
                self._notify([rel], [])
        return FrontmatterResult(
            path=rel,
            content_hash=after,
            before_hash=before,
            changed=changed,
            frontmatter=parse_note(rel, new_text).frontmatter,
        )

    def move(self, src: str, dst: str, expected_hash: str | None = None) -> MoveResult:
        """Move a note and rewrite the links that pointed at it; refuses an existing ``dst``."""
        src_rel, src_abs = self._resolve(src, for_write=True)
        dst_rel, dst_abs = self._resolve(dst, for_write=True)
        self._require_md(src_rel, "move")
        self._require_md(dst_rel, "move")
        if src_rel == dst_rel:
            raise WorkspaceError(f"move source and destination are the same path: {src_rel}")
        with self._lock:
            data, text = self._load(src_rel, src_abs)
            before = content_hash(data)
            self._check_expected(src_rel, before, expected_hash)
            if os.path.lexists(dst_abs):
                raise ConflictError(
                    f"{dst_rel} already exists; delete it first or choose another destination"
                )
            resolver = self._resolver()
            resolver.add(src_rel)
            plan = self._plan_rewrites(src_rel, dst_rel, resolver)
            outside = [p for p in plan if not self._allowed(p)]
            if outside:
                raise PathOutsideWorkspaceError(
                    f"moving {src_rel} would rewrite links in notes outside the paths allowed "
                    f"for this call: {', '.join(sorted(outside))}"
                )
            # Links inside the moved note that point at itself follow it too.
            moved_text, _ = rewrite_links(text, src_rel, dst_rel, resolver, src_rel)
            moved_data = moved_text.encode("utf-8")
            after = content_hash(moved_data)

            self._keep(src_rel)
            self._write_bytes(dst_rel, dst_abs, moved_data)
            os.unlink(src_abs)
            fsync_dir(src_abs.parent)
            prune_empty_folders(self.root, src_rel)
            self._record("move", src_rel, to=dst_rel, before_hash=before, after_hash=after)
            rewritten: list[str] = []
            for source, (source_abs, source_before, new_data) in sorted(plan.items()):
                self._write_bytes(source, source_abs, new_data)
                self._record(
                    "edit", source, before_hash=source_before, after_hash=content_hash(new_data)
                )
                rewritten.append(source)
            self._notify([dst_rel, *rewritten], [src_rel])
        return MoveResult(path=src_rel, to=dst_rel, content_hash=after, rewritten=rewritten)

    def delete(self, path: str, expected_hash: str | None = None) -> DeleteResult:
        """Delete a note; returns the notes whose links to it now dangle."""
        rel, absolute = self._resolve(path, for_write=True)
        self._require_md(rel, "delete")
        with self._lock:
            data, _ = self._load(rel, absolute)
            before = content_hash(data)
            self._check_expected(rel, before, expected_hash)
            inbound = sorted(
                s for s in self._inbound(rel) if s != rel and (self.root / s).is_file()
            )
            self._keep(rel)
            os.unlink(absolute)
            fsync_dir(absolute.parent)
            prune_empty_folders(self.root, rel)
            self._record("delete", rel, before_hash=before)
            self._notify([], [rel])
        return DeleteResult(path=rel, content_hash=before, inbound=inbound)

    # -- helpers for writes and links -------------------------------------------------------

    def _write_bytes(self, rel: str, absolute: Path, data: bytes) -> None:
        try:
            atomic_write(absolute, data)
        except NotADirectoryError as exc:
            raise WorkspaceError(f"cannot write {rel}: a parent of it is a file") from exc
        except FileExistsError as exc:
            raise WorkspaceError(f"cannot write {rel}: a parent of it is a file") from exc

    def _resolver(self) -> LinkResolver:
        return LinkResolver(self.paths.iter_files())

    def _inbound(self, rel: str, resolver: LinkResolver | None = None) -> list[str]:
        if self.inbound_lookup is not None:
            return list(self.inbound_lookup(rel))
        return scan_inbound(self.paths, self._load, rel, resolver or self._resolver())

    def _plan_rewrites(self, src_rel: str, dst_rel: str, resolver: LinkResolver) -> RewritePlan:
        inbound = self._inbound(src_rel, resolver)
        return plan_rewrites(self.paths, self._load, inbound, src_rel, dst_rel, resolver)
