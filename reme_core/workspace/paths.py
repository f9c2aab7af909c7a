"""Confinement: every path a tool touches is resolved here and must stay inside the workspace."""

from __future__ import annotations

import os
import posixpath
import re
import stat
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from reme_core.errors import InvalidPathError, PathOutsideWorkspaceError, WorkspaceError
from reme_core.schema.globs import Glob, compile_glob, is_glob

INTERNAL_DIRS: tuple[str, ...] = (".reme", ".git")
"""Folders no tool may write to: derived state (and the server token) and version history."""

_GLOB_CHARS = re.compile(r"[*?\[]")

MAX_PATH_BYTES = 1024
"""Longest workspace-relative path the tools accept (UTF-8 bytes); the OS refuses far sooner
than its PATH_MAX once the workspace's own location is added, with an unhelpful error."""
MAX_NAME_BYTES = 255
"""Longest file or folder name (NAME_MAX on Linux and macOS)."""


def _normalise(path: str) -> str:
    """Turn a user path into slash-separated form; backslashes count as separators."""
    return path.replace("\\", "/")


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
        if is_glob(p):
            if compile_glob(p).match(rel):
                return True
        elif rel == p or rel.startswith(p + "/"):
            return True
    return False


class PathPatterns:
    """``path_matches`` for one list of patterns, cleaned and compiled once (a walk asks it for
    every file). ``visible_only``: the caller never asks about a path with a hidden part (the
    walk skips them), so patterns that can only match such a path are dropped, as are globs
    whose fixed start the path does not have before their matcher runs."""

    def __init__(self, patterns: Iterable[str], *, visible_only: bool = False):
        self.everything = False
        self.prefixes: list[str] = []
        self.globs: list[tuple[str, Glob]] = []
        for raw in patterns:
            p = _clean_pattern(raw)
            if p is None:
                continue
            if p == "":
                self.everything = True
            elif not is_glob(p):
                self.prefixes.append(p)
            elif not (visible_only and _hidden_only(p)):
                found = _GLOB_CHARS.search(p)
                self.globs.append((p[: found.start()] if found else p, compile_glob(p)))

    def __bool__(self) -> bool:
        return self.everything or bool(self.prefixes or self.globs)

    def __call__(self, rel: str) -> bool:
        if self.everything:
            return True
        for p in self.prefixes:
            if rel == p or rel.startswith(p + "/"):
                return True
        return any(rel.startswith(head) and glob.match(rel) for head, glob in self.globs)

    def for_files_in(self, rel_dir: str) -> PathPatterns | None:
        """The patterns that may match a file directly in ``rel_dir`` (a folder the walk entered,
        so neither it nor any folder above it matched), None when none may: a walk then asks
        nothing per file there. A prefix can then only be the file's own path; a glob only
        when its fixed start and the folder's path agree as far as both go."""
        if self.everything:
            return self
        base = rel_dir + "/" if rel_dir else ""
        narrowed = PathPatterns(())
        narrowed.prefixes = [p for p in self.prefixes if p.rpartition("/")[0] == rel_dir]
        narrowed.globs = [
            (head, glob)
            for head, glob in self.globs
            if base.startswith(head) or head.startswith(base)
        ]
        return narrowed if narrowed else None


def _hidden_only(glob: str) -> bool:
    """Whether every path ``glob`` matches has a part starting with "." (``.git/**``, ``**/.*``):
    after any leading ``**/`` (nothing, or whole folders), a literal "." starts a part."""
    while glob.startswith("**/"):
        glob = glob[3:]
    return glob.startswith(".")


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


# Format controls that reorder or hide text (bidi overrides and isolates, marks, the Arabic
# letter mark, zero-width characters): a name holding one displays as another name.
_INVISIBLE = frozenset(
    "\u061c\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
    "\u2066\u2067\u2068\u2069\ufeff"
)


def _check_characters(path: str) -> None:
    """Refuse names no tool should make: control characters (a newline poisoned the vector
    store's ids), characters that change how a name displays, and text that is not valid
    Unicode (a lone surrogate, or a file name that was not UTF-8 on disk)."""
    for char in path:
        code = ord(char)
        if code < 0x20 or 0x7F <= code < 0xA0 or char in _INVISIBLE:
            raise InvalidPathError(
                f"path {path!r} contains the control or format character U+{code:04X}; "
                "names may not hold control, bidi or zero-width characters"
            )
        if 0xD800 <= code < 0xE000:
            raise InvalidPathError(
                f"path {path!r} is not valid UTF-8 (U+{code:04X} is a lone surrogate, as a "
                "name that is not UTF-8 on disk reads); rename the file"
            )


def _check_length(path: str) -> None:
    """Refuse paths the OS would reject with ENAMETOOLONG, naming the limit instead."""
    size = len(path.encode("utf-8", "surrogatepass"))
    if size > MAX_PATH_BYTES:
        raise InvalidPathError(
            f"path of {size} bytes is over the {MAX_PATH_BYTES}-byte limit (starts {path[:40]!r})"
        )
    for name in _normalise(path).split("/"):
        if len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
            raise InvalidPathError(
                f"name {name[:40]!r}... in path is over the {MAX_NAME_BYTES}-byte limit for one "
                "file or folder name"
            )


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
        confinement: Sequence[Sequence[str]] = (),
    ) -> tuple[str, Path]:
        """Return ``(relative POSIX path, absolute path)`` or raise PathOutsideWorkspaceError.

        ``allowed_paths`` and each list in ``confinement`` must all allow the path, by its given
        name and by its real location.

        Symbolic links are followed for reading only when they land inside the workspace and
        outside ``.reme/`` and ``.git/`` (and inside ``allowed_paths`` by their real location);
        nothing is written, moved or deleted through a link. A file with more than one hard
        link is refused either way: its other names could be anywhere, ``.reme/token`` included.
        """
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
        limits = [*([allowed_paths] if allowed_paths is not None else []), *confinement]
        for allowed in limits:
            self.check_allowed(rel, allowed, original=path)
        absolute = self.root / rel
        real_rel = self._real_relative(path, rel, absolute)
        if real_rel != rel:
            if for_write:
                raise PathOutsideWorkspaceError(
                    f"path {path!r} goes through a symbolic link (to {real_rel!r}); reme does "
                    "not write, move or delete through links: use the real path"
                )
            for allowed in limits:
                self.check_allowed(real_rel, allowed, original=path)
        self._check_hard_links(path, absolute)
        return rel, absolute

    def relative(self, path: str) -> str:
        """Normalise ``path`` to a workspace-relative POSIX path ("" for the root itself)."""
        if not isinstance(path, str):
            raise PathOutsideWorkspaceError(f"path must be a string, got {type(path).__name__}")
        if "\0" in path:
            raise PathOutsideWorkspaceError(f"path {path!r} contains a NUL byte")
        if path.strip() == "":
            raise PathOutsideWorkspaceError("path is empty: give a workspace-relative path")
        _check_characters(path)
        _check_length(path)
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

    def _real_relative(self, original: str, rel: str, absolute: Path) -> str:
        """Where ``absolute`` really lands, relative to the real root; raises when that is
        outside the workspace or inside one of its internal folders."""
        # The deepest existing ancestor decides where the path really lands; anything below it
        # does not exist yet, so it cannot be a link.
        probe = absolute
        while not os.path.lexists(probe) and probe != self.root:
            probe = probe.parent
        real = Path(os.path.realpath(probe)) / absolute.relative_to(probe)
        if real != self.real_root and self.real_root not in real.parents:
            raise PathOutsideWorkspaceError(
                f"path {original!r} leads outside the workspace through a symbolic link"
            )
        real_rel = real.relative_to(self.real_root).as_posix()
        if real_rel == ".":
            real_rel = ""
        if real_rel != rel and is_internal(real_rel):
            raise PathOutsideWorkspaceError(
                f"path {original!r} leads into {real_rel.split('/', 1)[0]}/ through a symbolic "
                "link; that folder is not exposed"
            )
        return real_rel

    @staticmethod
    def _check_hard_links(original: str, absolute: Path) -> None:
        try:
            info = absolute.stat()
        except OSError:
            return  # missing (a new file) or unreadable: the tool reports that itself
        if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
            raise PathOutsideWorkspaceError(
                f"path {original!r} has {info.st_nlink} hard links; reme cannot tell where the "
                "other names are (.reme/ or outside the workspace), so it does not expose it: "
                "replace it with a copy"
            )

    def refusal(self, rel: str) -> str | None:
        """Why the file at ``rel`` may not be read through reme, or None when it may.

        The indexer and the watcher ask this before reading a file, so a link into ``.reme/``
        or out of the workspace is never indexed (and never read).
        """
        try:
            self.resolve(rel)
        except WorkspaceError as exc:
            # Problem lines already start with the path: say only what is wrong with it.
            return str(exc).removeprefix(f"path {rel!r} ")
        return None

    def is_inside(self, absolute: Path) -> bool:
        """True when the real location of ``absolute`` is inside the workspace, outside its
        internal folders (``.reme/``, ``.git/``)."""
        real = Path(os.path.realpath(absolute))
        if real == self.real_root:
            return True
        if self.real_root not in real.parents:
            return False
        return not is_internal(real.relative_to(self.real_root).as_posix())

    def iter_files(
        self,
        suffixes: Iterable[str] | None = None,
        exclude_globs: Iterable[str] = (),
    ) -> Iterator[str]:
        """Yield workspace-relative file paths, sorted; hidden and symlinked folders are skipped."""
        wanted = {s.lower() for s in suffixes} if suffixes is not None else None
        excluded = PathPatterns(exclude_globs, visible_only=True)
        for rel, _ in self._walk(self.root, "", wanted, excluded):
            yield rel

    def file_stats(
        self,
        suffixes: Iterable[str] | None = None,
        exclude_globs: Iterable[str] = (),
    ) -> dict[str, os.stat_result | None]:
        """``iter_files`` with each file's stat (a linked file's target's; None when it cannot be
        read), as one dict sorted by path (not folder by folder, as ``iter_files`` goes).

        This is what every index pass lists (10k files on a no-op ``reme index``), so it walks
        with a stack instead of nested generators, asks the exclude patterns about a file only
        in folders where one of them may match it, and sorts once at the end. The same rules as
        ``_walk``: hidden names and linked folders are skipped, linked files count only when they
        stay inside the workspace.
        """
        wanted = tuple({s.lower() for s in suffixes}) if suffixes is not None else None
        excluded = PathPatterns(exclude_globs, visible_only=True)
        found: dict[str, os.stat_result | None] = {}
        todo: list[tuple[str, str]] = [(str(self.root), "")]
        while todo:
            folder, rel_dir = todo.pop()
            try:
                with os.scandir(folder) as scan:
                    entries = list(scan)
            except OSError:
                continue
            base = rel_dir + "/" if rel_dir else ""
            check = excluded.for_files_in(rel_dir) if excluded else None
            for entry in entries:
                name = entry.name
                if name[0] == ".":
                    continue
                # Cheapest questions first: most entries are plain files with a wanted suffix.
                try:
                    if entry.is_dir(follow_symlinks=False):  # a real folder, not a link to one
                        rel = base + name
                        if not (excluded and (excluded(rel) or excluded(rel + "/"))):
                            todo.append((entry.path, rel))
                        continue
                    if wanted is not None and not name.lower().endswith(wanted):
                        continue
                    if entry.is_symlink() and (
                        entry.is_dir() or not self.is_inside(Path(entry.path))
                    ):
                        continue
                    if not entry.is_file():
                        continue
                except OSError:
                    continue
                rel = base + name
                if check is not None and check(rel):
                    continue
                try:
                    found[rel] = entry.stat()
                except OSError:
                    found[rel] = None
        return {rel: found[rel] for rel in sorted(found)}

    def _walk(
        self,
        folder: Path | str,
        rel_dir: str,
        wanted: set[str] | None,
        excluded: PathPatterns,
    ) -> Iterator[tuple[str, os.DirEntry[str]]]:
        try:
            with os.scandir(folder) as scan:
                entries = sorted(scan, key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            name = entry.name
            if name.startswith("."):
                continue
            rel = f"{rel_dir}/{name}" if rel_dir else name
            try:
                # Linked folders are not walked (loops, and one note under two paths);
                # linked files count only when they stay inside the workspace.
                if entry.is_symlink() and (entry.is_dir() or not self.is_inside(Path(entry.path))):
                    continue
                is_dir = entry.is_dir()
            except OSError:
                continue
            if is_dir:
                if excluded and (excluded(rel) or excluded(rel + "/")):
                    continue
                yield from self._walk(entry.path, rel, wanted, excluded)
            elif entry.is_file():
                dot = name.rfind(".")  # Path(name).suffix, without building a Path per file
                if wanted is not None and (dot <= 0 or name[dot:].lower() not in wanted):
                    continue
                if excluded and excluded(rel):
                    continue
                yield rel, entry
