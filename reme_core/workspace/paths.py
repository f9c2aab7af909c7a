"""Confinement: every path a tool touches is resolved here and must stay inside the workspace."""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache
from pathlib import Path

from reme_core.errors import PathOutsideWorkspaceError

INTERNAL_DIRS: tuple[str, ...] = (".reme", ".git")
"""Folders no tool may write to: derived state (and the server token) and version history."""

_GLOB_CHARS = re.compile(r"[*?\[]")


def _normalise(path: str) -> str:
    """Turn a user path into slash-separated form; backslashes count as separators."""
    return path.replace("\\", "/")


@lru_cache(maxsize=512)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    """Compile a workspace glob: ``**`` crosses folders, ``*`` and ``?`` stay within one."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                out.append(re.escape(c))
                i += 1
            else:
                body = pattern[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = end + 1
        else:
            out.append(re.escape(c))
            i += 1
    return re.compile("".join(out) + r"\Z")


def _clean_pattern(pattern: str) -> str | None:
    """Normalise an allowed/exclude entry; None when it could never be honoured safely."""
    p = _normalise(pattern).strip()
    while p.startswith("./"):
        p = p[2:]
    p = p.strip("/")
    if "\0" in p or ".." in p.split("/"):
        return None
    return p


def path_matches(rel: str, patterns: Iterable[str]) -> bool:
    """True when ``rel`` equals or lies under a listed prefix, or matches a listed glob."""
    for raw in patterns:
        p = _clean_pattern(raw)
        if p is None:
            continue
        if p == "":
            return True  # "" or "/" names the whole workspace
        if _GLOB_CHARS.search(p):
            if _glob_regex(p).match(rel):
                return True
        elif rel == p or rel.startswith(p + "/"):
            return True
    return False


def may_contain(rel_dir: str, patterns: Iterable[str]) -> bool:
    """True when a folder is allowed itself or could hold something a pattern allows."""
    if path_matches(rel_dir, patterns):
        return True
    for raw in patterns:
        p = _clean_pattern(raw)
        if p is None:
            continue
        m = _GLOB_CHARS.search(p)
        if m is None:
            static = p
        else:
            head = p[: m.start()]
            static = head.rsplit("/", 1)[0] if "/" in head else ""
        if rel_dir == "" or static == rel_dir or static.startswith(rel_dir + "/"):
            return True  # the folder is an ancestor of the allowed area
        if m is not None and (static == "" or rel_dir.startswith(static + "/")):
            return True  # a folder inside a glob's fixed prefix may hold matching files
    return False


def is_internal(rel: str) -> bool:
    """True for paths under ``.reme/`` or ``.git/`` (or those folders themselves)."""
    first = rel.split("/", 1)[0]
    return first in INTERNAL_DIRS


class WorkspacePaths:
    """Resolves user-supplied paths against one workspace root, refusing every escape."""

    def __init__(self, root: Path):
        self.root = Path(os.path.abspath(root))
        self.real_root = Path(os.path.realpath(self.root))

    def resolve(
        self,
        path: str,
        *,
        allowed_paths: Sequence[str] | None = None,
        for_write: bool = False,
    ) -> tuple[str, Path]:
        """Return ``(relative POSIX path, absolute path)`` or raise PathOutsideWorkspaceError."""
        rel = self.relative(path)
        if rel == "":
            raise PathOutsideWorkspaceError(
                f"path {path!r} names the workspace root, not a file in it"
            )
        if for_write and is_internal(rel):
            raise PathOutsideWorkspaceError(
                f"path {path!r} is inside {rel.split('/', 1)[0]}/, which holds derived state "
                "and cannot be written through the file tools"
            )
        self.check_allowed(rel, allowed_paths, original=path)
        absolute = self.root / rel
        self._check_symlinks(path, absolute)
        return rel, absolute

    def relative(self, path: str) -> str:
        """Normalise ``path`` to a workspace-relative POSIX path ("" for the root itself)."""
        if not isinstance(path, str):
            raise PathOutsideWorkspaceError(f"path must be a string, got {type(path).__name__}")
        if "\0" in path:
            raise PathOutsideWorkspaceError(f"path {path!r} contains a NUL byte")
        if path.strip() == "":
            raise PathOutsideWorkspaceError("path is empty: give a workspace-relative path")
        norm = _normalise(path)
        if norm.startswith("/") or re.match(r"^[A-Za-z]:/", norm):
            norm = self._absolute_to_relative(path, norm)
        parts = [p for p in norm.split("/") if p not in ("", ".")]
        if ".." in parts:
            raise PathOutsideWorkspaceError(
                f"path {path!r} contains '..': paths must stay inside the workspace"
            )
        return "/".join(parts)

    def _absolute_to_relative(self, original: str, norm: str) -> str:
        candidate = posixpath.normpath(norm)
        for base in (self.root.as_posix(), self.real_root.as_posix()):
            if candidate == base:
                return ""
            if candidate.startswith(base.rstrip("/") + "/"):
                return candidate[len(base.rstrip("/")) + 1 :]
        raise PathOutsideWorkspaceError(
            f"absolute path {original!r} is outside the workspace {self.root}"
        )

    def check_allowed(
        self, rel: str, allowed_paths: Sequence[str] | None, *, original: str | None = None
    ) -> None:
        """Raise unless ``rel`` is within ``allowed_paths`` (None = no limit, [] = nothing)."""
        if allowed_paths is None:
            return
        if not path_matches(rel, allowed_paths):
            shown = ", ".join(allowed_paths) if allowed_paths else "none"
            raise PathOutsideWorkspaceError(
                f"path {original or rel!r} is outside the paths allowed for this call ({shown})"
            )

    def _check_symlinks(self, original: str, absolute: Path) -> None:
        # The deepest existing ancestor decides where the path really lands; anything it points
        # at must stay under the real root, so a symlink cannot smuggle a write outside.
        probe = absolute
        while not os.path.lexists(probe) and probe != self.root:
            probe = probe.parent
        real = Path(os.path.realpath(probe))
        if real != self.real_root and self.real_root not in real.parents:
            raise PathOutsideWorkspaceError(
                f"path {original!r} leads outside the workspace through a symbolic link"
            )

    def is_inside(self, absolute: Path) -> bool:
        """True when the real location of ``absolute`` is inside the workspace."""
        real = Path(os.path.realpath(absolute))
        return real == self.real_root or self.real_root in real.parents

    def iter_files(
        self,
        suffixes: Iterable[str] | None = None,
        exclude_globs: Iterable[str] = (),
    ) -> Iterator[str]:
        """Yield workspace-relative file paths, sorted; hidden and symlinked folders are skipped."""
        wanted = {s.lower() for s in suffixes} if suffixes is not None else None
        yield from self._walk(self.root, "", wanted, list(exclude_globs))

    def _walk(
        self,
        folder: Path,
        rel_dir: str,
        wanted: set[str] | None,
        excludes: list[str],
    ) -> Iterator[str]:
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            if entry.name.startswith("."):
                continue
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                # Linked folders are not walked (loops, and one note under two paths);
                # linked files count only when they stay inside the workspace.
                if entry.is_symlink() and (entry.is_dir() or not self.is_inside(Path(entry.path))):
                    continue
                is_dir = entry.is_dir()
            except OSError:
                continue
            if is_dir:
                if excludes and (path_matches(rel, excludes) or path_matches(rel + "/", excludes)):
                    continue
                yield from self._walk(Path(entry.path), rel, wanted, excludes)
            elif entry.is_file():
                if wanted is not None and Path(entry.name).suffix.lower() not in wanted:
                    continue
                if excludes and path_matches(rel, excludes):
                    continue
                yield rel
