"""The read-only file tools (read, stat, ls), and the confinement and loading every tool shares.

``FileTools`` (``reme_core.workspace.tools``) adds the tools that change the workspace; callers
use that. A path is refused (outside the workspace or the call's allowed paths, inside
``.reme/``, binary, too big, not UTF-8) before anything is read.
"""

from __future__ import annotations

import copy
import datetime as dt
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Self

from reme_core.errors import (
    NotFoundError,
    PathOutsideWorkspaceError,
    RemeError,
    UnsupportedFileError,
    WorkspaceError,
)
from reme_core.workspace.hashing import content_hash
from reme_core.workspace.notes import parse_note
from reme_core.workspace.paths import WorkspacePaths, is_internal, may_contain, path_matches
from reme_core.workspace.results import LsEntry, LsResult, ReadResult, StatResult

TEXT_SUFFIXES: tuple[str, ...] = (".md", ".txt", ".jsonl")
MAX_FILE_BYTES = 5_242_880
"""The file tools' default size limit (``FileTools.max_file_bytes``)."""
BINARY_SNIFF_BYTES = 8192
LS_MAX_ENTRIES = 2000


def split_lines(text: str) -> list[str]:
    """Lines with their newlines; only ``\\n`` ends a line, so counts agree with the chunkers."""
    if not text:
        return []
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


class ReadTools:
    """Confined, read-only file operations on one workspace."""

    def __init__(
        self,
        root: Path,
        *,
        allowed_paths: Sequence[str] | None = None,
        max_read_bytes: int = 51200,
        max_file_bytes: int = MAX_FILE_BYTES,
    ):
        self.paths = WorkspacePaths(root)
        self.root = self.paths.root
        self.max_read_bytes = max_read_bytes
        self.max_file_bytes = max_file_bytes
        # Each confinement narrows the previous ones: a path must satisfy every list.
        self._confinement: tuple[tuple[str, ...], ...] = (
            () if allowed_paths is None else (tuple(allowed_paths),)
        )

    # -- confinement ------------------------------------------------------------------------

    @property
    def confinement(self) -> tuple[tuple[str, ...], ...]:
        """The allowed-path lists in force; empty when the tools are unconfined."""
        return self._confinement

    def confined(self, allowed_paths: Sequence[str] | None) -> Self:
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

    # -- loading ----------------------------------------------------------------------------

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


def _undecodable(name: str) -> bool:
    """Whether the OS gave ``name`` as bytes that are not UTF-8 (surrogate escapes)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
