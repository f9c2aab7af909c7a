"""File tools: the only way the API and inner agents read and change the workspace.

Every refusal happens before the disk is touched; every write is atomic, journalled, and
reported to ``on_change`` so the indexer sees it before the call returns.
"""

from __future__ import annotations

import contextlib
import copy
import datetime as dt
import json
import os
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from reme_core.errors import (
    ConflictError,
    EditError,
    NotFoundError,
    PathOutsideWorkspaceError,
    RemeError,
    UnsupportedFileError,
    WorkspaceError,
)
from reme_core.workspace import frontmatter as fm
from reme_core.workspace.hashing import content_hash
from reme_core.workspace.journal import Journal, JournalOp
from reme_core.workspace.notes import parse_note
from reme_core.workspace.paths import WorkspacePaths, is_internal, may_contain, path_matches
from reme_core.workspace.results import (
    DeleteResult,
    EditResult,
    FrontmatterResult,
    LsEntry,
    LsResult,
    MoveResult,
    ReadResult,
    StatResult,
    WriteResult,
)
from reme_core.workspace.wikilinks import LinkResolver, rewrite_links

TEXT_SUFFIXES: tuple[str, ...] = (".md", ".txt", ".jsonl")
MAX_FILE_BYTES = 5_242_880
"""The file tools' default size limit (``FileTools.max_file_bytes``)."""
BINARY_SNIFF_BYTES = 8192
LS_MAX_ENTRIES = 2000

OnChange = Callable[[list[str], list[str]], None]
InboundLookup = Callable[[str], list[str]]
BeforeRemove = Callable[[str], None]
"""Called with a note about to be deleted or moved away, so its current text (edited outside
reme, say) can be kept first."""


def split_lines(text: str) -> list[str]:
    """Lines with their newlines; only ``\\n`` ends a line, so counts agree with the chunkers."""
    if not text:
        return []
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return  # some filesystems do not allow opening folders; the rename is still atomic
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def prune_empty_folders(root: Path, rel: str) -> list[str]:
    """Remove the folders above ``rel`` (a file just deleted or moved away) that it left empty,
    deepest first, stopping at the first one still holding anything and never removing the
    workspace's own skeleton (``layout.FOLDERS`` and their parents). Returns what it removed."""
    from reme_core.workspace.layout import FOLDERS  # layout builds on this module

    kept = {""} | {
        "/".join(f.split("/")[: i + 1]) for f in FOLDERS for i in range(f.count("/") + 1)
    }
    removed: list[str] = []
    folder = os.path.dirname(rel)
    while folder not in kept:
        try:
            os.rmdir(root / folder)  # refuses a folder that is not empty: that is the stop
        except OSError:
            break
        removed.append(folder)
        folder = os.path.dirname(folder)
    if removed:
        _fsync_dir(root / folder if folder else root)
    return removed


def atomic_write(path: Path, data: bytes) -> None:
    """Write via a temp file in the same folder, fsync, rename, fsync the folder."""
    folder = path.parent
    folder.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o7777 if path.exists() else 0o644
    # A fixed-length temp name: one built from the note's name went past NAME_MAX for names of
    # 242-255 bytes, which the path check had accepted.
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".reme-write-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(folder)


class FileTools:
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
        self.paths = WorkspacePaths(root)
        self.root = self.paths.root
        self.journal = journal
        self.on_change = on_change
        self.before_remove = before_remove
        self.inbound_lookup = inbound_lookup
        self.max_read_bytes = max_read_bytes
        self.max_file_bytes = max_file_bytes
        self.actor = actor
        # Each confinement narrows the previous ones: a path must satisfy every list.
        self._confinement: tuple[tuple[str, ...], ...] = (
            () if allowed_paths is None else (tuple(allowed_paths),)
        )
        self._lock = threading.RLock()

    # -- confinement ------------------------------------------------------------------------

    @property
    def confinement(self) -> tuple[tuple[str, ...], ...]:
        """The allowed-path lists in force; empty when the tools are unconfined."""
        return self._confinement

    def confined(self, allowed_paths: Sequence[str] | None) -> FileTools:
        """A copy limited further to ``allowed_paths``; it can only narrow, never widen."""
        clone = copy.copy(self)
        if allowed_paths is not None:
            clone._confinement = (*self._confinement, tuple(allowed_paths))
        return clone

    def _allowed(self, rel: str) -> bool:
        return all(path_matches(rel, allowed) for allowed in self._confinement)

    def _resolve(self, path: str, *, for_write: bool) -> tuple[str, Path]:
        rel, absolute = self.paths.resolve(path, for_write=for_write, confinement=self._confinement)
        if is_internal(rel):
            # .reme/ holds the server token and derived state: not readable through the tools.
            raise PathOutsideWorkspaceError(
                f"path {path!r} is inside {rel.split('/', 1)[0]}/, "
                "which the file tools do not expose"
            )
        return rel, absolute

    # -- loading and checks -----------------------------------------------------------------

    def _load(self, rel: str, absolute: Path) -> tuple[bytes, str]:
        if not os.path.lexists(absolute):
            raise NotFoundError(f"{rel} does not exist")
        if absolute.is_dir():
            raise WorkspaceError(f"{rel} is a folder, not a file; use ls to list it")
        if not absolute.is_file():
            raise UnsupportedFileError(f"{rel} is not a regular file")
        size = absolute.stat().st_size
        if size > self.max_file_bytes:
            raise UnsupportedFileError(
                f"{rel} is {size} bytes, over the {self.max_file_bytes}-byte limit for file tools"
            )
        data = absolute.read_bytes()
        if b"\0" in data[:BINARY_SNIFF_BYTES]:
            raise UnsupportedFileError(f"{rel} looks binary (NUL bytes); file tools handle text")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UnsupportedFileError(
                f"{rel} is not valid UTF-8 text (byte {exc.start}); file tools handle text"
            ) from exc
        return data, text

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

    # -- read-only tools --------------------------------------------------------------------

    def read(self, path: str, start_line: int = 1, end_line: int | None = None) -> ReadResult:
        """Read lines of a text file (.md, .txt, .jsonl), up to ``max_read_bytes`` per call."""
        rel, absolute = self._resolve(path, for_write=False)
        if not rel.lower().endswith(TEXT_SUFFIXES):
            raise UnsupportedFileError(
                f"read handles {', '.join(TEXT_SUFFIXES)} files; {rel} is not one"
            )
        data, text = self._load(rel, absolute)
        lines = split_lines(text)
        total = len(lines)
        if start_line < 1:
            raise WorkspaceError(f"start_line must be 1 or more, got {start_line}")
        if end_line is not None and end_line < start_line:
            raise WorkspaceError(f"end_line {end_line} is before start_line {start_line}")
        if start_line > max(total, 1):
            raise WorkspaceError(
                f"start_line {start_line} is past the end of {rel} ({total} lines)"
            )
        last = total if end_line is None else min(end_line, total)

        out: list[str] = []
        used = 0
        truncated = False
        next_start: int | None = None
        hint: str | None = None
        line_no = start_line - 1
        for index in range(start_line - 1, last):
            encoded = lines[index].encode("utf-8")
            if used + len(encoded) > self.max_read_bytes:
                truncated = True
                if not out:
                    # One line longer than the budget: return its head so the caller sees something.
                    out.append(encoded[: self.max_read_bytes].decode("utf-8", "ignore"))
                    line_no = index + 1
                    next_start = index + 2 if index + 1 < last else None
                    hint = f"... line {index + 1} was cut at {self.max_read_bytes} bytes"
                    if next_start is not None:
                        hint += f"; read the rest with start_line={next_start}"
                else:
                    next_start = index + 1
                    hint = f"... read the rest with start_line={next_start}"
                break
            out.append(lines[index])
            used += len(encoded)
            line_no = index + 1
        return ReadResult(
            path=rel,
            content="".join(out),
            start_line=start_line,
            end_line=line_no,
            total_lines=total,
            size=len(data),
            content_hash=content_hash(data),
            truncated=truncated,
            next_start_line=next_start,
            hint=hint,
        )

    def stat(self, path: str) -> StatResult:
        """Size, hash, modification time, line count and (for notes) the frontmatter."""
        rel, absolute = self._resolve(path, for_write=False)
        data, text = self._load(rel, absolute)
        is_note = rel.lower().endswith(".md")
        front: dict[str, Any] | None = None
        error: str | None = None
        if is_note:
            try:
                front = parse_note(rel, text).frontmatter
            except RemeError as exc:
                error = str(exc)
        return StatResult(
            path=rel,
            size=len(data),
            content_hash=content_hash(data),
            modified=dt.datetime.fromtimestamp(absolute.stat().st_mtime, tz=dt.UTC),
            line_count=len(split_lines(text)),
            is_note=is_note,
            frontmatter=front,
            frontmatter_error=error,
        )

    def ls(self, path: str = "", recursive: bool = False) -> LsResult:
        """List a folder (the root by default), skipping hidden and internal folders."""
        if path.strip() in ("", ".", "/", "./"):
            rel, absolute = "", self.paths.root
        else:
            rel, absolute = self._resolve_dir(path)
        if not absolute.exists():
            raise NotFoundError(f"{rel} does not exist")
        if absolute.is_file():
            return LsResult(
                path=rel,
                entries=[LsEntry(path=rel, kind="file", size=absolute.stat().st_size)],
            )
        if not all(may_contain(rel, allowed) for allowed in self._confinement):
            raise PathOutsideWorkspaceError(
                f"folder {path!r} is outside the paths allowed for this call"
            )
        entries: list[LsEntry] = []
        truncated = self._list(absolute, rel, recursive, entries)
        return LsResult(path=rel, entries=entries, truncated=truncated)

    def _resolve_dir(self, path: str) -> tuple[str, Path]:
        rel, absolute = self.paths.resolve(path)
        if is_internal(rel):
            raise PathOutsideWorkspaceError(
                f"path {path!r} is inside {rel.split('/', 1)[0]}/, "
                "which the file tools do not expose"
            )
        if absolute.is_file():
            for allowed in self._confinement:
                self.paths.check_allowed(rel, allowed, original=path)
        return rel, absolute

    def _list(self, folder: Path, rel_dir: str, recursive: bool, out: list[LsEntry]) -> bool:
        try:
            children = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            raise WorkspaceError(f"cannot list {rel_dir or '.'}: {exc.strerror}") from exc
        for entry in children:
            if entry.name.startswith(".") or _undecodable(entry.name):
                continue  # a name that is not UTF-8 cannot be answered; ``status`` reports it
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            if entry.is_symlink() and not self.paths.is_inside(Path(entry.path)):
                continue
            if len(out) >= LS_MAX_ENTRIES:
                return True
            if entry.is_dir():
                if not all(may_contain(rel, allowed) for allowed in self._confinement):
                    continue
                out.append(LsEntry(path=rel, kind="dir"))
                # Linked folders are listed but not entered: a link to an ancestor would loop.
                walk = recursive and not entry.is_symlink()
                if walk and self._list(Path(entry.path), rel, recursive, out):
                    return True
            elif entry.is_file():
                if not self._allowed(rel):
                    continue
                out.append(LsEntry(path=rel, kind="file", size=entry.stat().st_size))
        return False

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
            _fsync_dir(src_abs.parent)
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
            _fsync_dir(absolute.parent)
            prune_empty_folders(self.root, rel)
            self._record("delete", rel, before_hash=before)
            self._notify([], [rel])
        return DeleteResult(path=rel, content_hash=before, inbound=inbound)

    # -- helpers for links ------------------------------------------------------------------

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
        resolver = resolver or self._resolver()
        sources: list[str] = []
        for source in self.paths.iter_files(suffixes=(".md",)):
            if source == rel:
                continue
            text = self._try_text(source)
            if text is None:
                continue
            if any(link.target == rel for link in resolver.links_for(source, text)):
                sources.append(source)
        return sources

    def _try_text(self, rel: str) -> str | None:
        try:
            return self._load(rel, self.root / rel)[1]
        except WorkspaceError:
            return None

    def _plan_rewrites(
        self, src_rel: str, dst_rel: str, resolver: LinkResolver
    ) -> dict[str, tuple[Path, str, bytes]]:
        plan: dict[str, tuple[Path, str, bytes]] = {}
        for source in sorted(set(self._inbound(src_rel, resolver))):
            if source in (src_rel, dst_rel) or not source.lower().endswith(".md"):
                continue
            try:
                source_rel, source_abs = self.paths.resolve(source, for_write=True)
                data, text = self._load(source_rel, source_abs)
            except WorkspaceError:
                continue  # gone, binary or unreadable: it holds no links to rewrite
            new_text, count = rewrite_links(text, src_rel, dst_rel, resolver, source_rel)
            if count:
                plan[source_rel] = (source_abs, content_hash(data), new_text.encode("utf-8"))
        return plan


def _undecodable(name: str) -> bool:
    """Whether the OS gave ``name`` as bytes that are not UTF-8 (surrogate escapes)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
