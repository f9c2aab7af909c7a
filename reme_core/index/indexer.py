"""Keeps the catalog, keyword index, link graph and tag index in step with the files.

Change detection is by content hash. One scope (suffixes with a chunker, minus the exclude globs)
serves the full scan, API writes and the watcher alike.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from reme_core.components import Chunker, Graph, KeywordIndex, TagIndex
from reme_core.errors import RemeError
from reme_core.index.catalog import Catalog
from reme_core.schema import NoteSummary
from reme_core.workspace import LinkResolver, WorkspacePaths, parse_note, path_matches
from reme_core.workspace.wikilinks import may_resolve_to, target_names

if TYPE_CHECKING:
    from reme_core.index.vectors import VectorIndex

_DATE_IN_PATH = re.compile(r"(?:^|/)(\d{4}-\d{2}-\d{2})(?:/|\.|$)")


class IndexReport(BaseModel):
    """What one indexing pass did."""

    indexed: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    unchanged: int = 0
    relinked: int = 0
    problems: dict[str, str] = Field(default_factory=dict)
    seconds: float = 0.0


class Indexer:
    """Applies file changes to every projection. All public methods are serialised by one lock."""

    def __init__(
        self,
        paths: WorkspacePaths,
        catalog: Catalog,
        *,
        chunkers: Mapping[str, Chunker],
        keyword: KeywordIndex,
        graph: Graph | None,
        tags: TagIndex | None,
        exclude: Sequence[str] = (),
        max_file_bytes: int = 5 * 1024 * 1024,
    ):
        self.paths = paths
        self.catalog = catalog
        self.chunkers = dict(chunkers)
        self.keyword = keyword
        self.graph = graph
        self.tags = tags
        self.exclude = list(exclude)
        self.max_file_bytes = max_file_bytes
        self.lock = threading.RLock()
        self.vectors: VectorIndex | None = None
        """Set by the runtime when vectors are configured; ``update`` embeds before returning."""
        self._resolver: LinkResolver | None = None

    # -- scope -------------------------------------------------------------------------------

    def in_scope(self, path: str) -> bool:
        """Whether ``path`` (workspace-relative) is a file kind the index covers and not excluded."""
        posix = PurePosixPath(path)
        if posix.suffix.lower() not in self.chunkers:
            return False
        # Mirror WorkspacePaths.iter_files (the scan), so API writes and watcher events agree
        # with it: hidden parts are skipped, folders match as "dir" or "dir/", files as a path.
        parts = posix.parts
        if any(part.startswith(".") for part in parts):
            return False
        for depth in range(1, len(parts)):
            folder = "/".join(parts[:depth])
            if path_matches(folder, self.exclude) or path_matches(folder + "/", self.exclude):
                return False
        return not path_matches(path, self.exclude)

    def scope_files(self) -> list[str]:
        return sorted(self.paths.iter_files(tuple(self.chunkers), self.exclude))

    # -- passes ------------------------------------------------------------------------------

    def scan(self) -> IndexReport:
        """Incremental pass over the whole workspace: index what changed, drop what vanished."""
        with self.lock:
            started = time.perf_counter()
            on_disk = self.scope_files()
            known = self.catalog.hashes()
            self._resolver = LinkResolver(on_disk)
            changed: dict[str, bytes] = {}
            unchanged = 0
            for path in on_disk:
                data = self._read(path)
                if data is not None and known.get(path) == _hash(data):
                    unchanged += 1
                else:
                    changed[path] = data if data is not None else b""
            removed = sorted(set(known) - set(on_disk))
            report = self._apply(changed, removed, added=set(on_disk) - set(known))
            report.unchanged = unchanged
            report.seconds = time.perf_counter() - started
            return report

    def update(self, changed: Iterable[str], removed: Iterable[str] = ()) -> IndexReport:
        """Index the named paths now (API writes, watcher events). Missing files count as removed."""
        with self.lock:
            started = time.perf_counter()
            resolver = self._link_resolver()
            known = self.catalog.hashes()
            gone = {p for p in removed if self.in_scope(p)}
            todo: dict[str, bytes] = {}
            for path in dict.fromkeys(changed):
                if not self.in_scope(path):
                    continue
                if not (self.paths.root / path).is_file():
                    gone.add(path)
                    continue
                data = self._read(path)
                if data is None or known.get(path) != _hash(data):
                    todo[path] = data if data is not None else b""
            # Only paths the index knew about are removals worth reporting.
            gone = {p for p in gone if p in known}
            added = {p for p in todo if p not in known}
            for path in added:
                resolver.add(path)
            for path in gone:
                resolver.remove(path)
            report = self._apply(todo, sorted(gone), added=added)
            if self.vectors is not None:
                self.vectors.sync(report.indexed, report.removed)
            report.unchanged = len(known) - len(set(todo) - added) - len(gone)
            report.seconds = time.perf_counter() - started
            return report

    def rebuild(self) -> IndexReport:
        """Drop every projection and index the workspace from scratch."""
        with self.lock:
            self.catalog.clear()
            self.keyword.clear()
            if self.graph is not None:
                self.graph.clear()
            if self.tags is not None:
                self.tags.clear()
            if self.vectors is not None:
                self.vectors.clear()  # re-stored from the embedding cache by the next reconcile
            return self.scan()

    def optimize(self) -> None:
        with self.lock:
            self.keyword.optimize()
            self.keyword.flush()

    # -- internals ---------------------------------------------------------------------------

    def _apply(
        self, changed: Mapping[str, bytes], removed: Sequence[str], added: set[str]
    ) -> IndexReport:
        report = IndexReport()
        relink: set[str] = set()
        for path in removed:
            if self.graph is not None:
                relink.update(link.source for link in self.graph.inbound(path))
            self._forget(path)
            report.removed.append(path)
        if added and self.graph is not None:
            # Only notes with a dangling link that could now point at a new file: rereading
            # every note with any dangling link made each new note cost O(workspace).
            names = target_names(added)
            relink.update(
                link.source for link in self.graph.unresolved() if may_resolve_to(link.raw, names)
            )
        for path, data in changed.items():
            problem = self._index_file(path, data)
            if problem:
                report.problems[path] = problem
            else:
                report.indexed.append(path)
        for source in sorted(relink - set(changed) - set(removed)):
            if self._relink(source):
                report.relinked += 1
        self.keyword.flush()
        return report

    def _index_file(self, path: str, data: bytes) -> str | None:
        """Index one file; return a problem message instead when it cannot be indexed."""
        try:
            text = self._decode(path, data)
            suffix = PurePosixPath(path).suffix.lower()
            summary = self._summary(path, text, data)
            chunks = self.chunkers[suffix].chunk(path, text)
        except RemeError as exc:
            self._forget(path)
            self.catalog.set_problem(path, str(exc))
            return str(exc)
        self.catalog.put(summary, chunks)
        self.keyword.upsert(path, chunks)
        if self.tags is not None:
            self.tags.set_tags(path, summary.tags)
        if suffix == ".md" and self.graph is not None:
            self.graph.set_links(path, self._link_resolver().links_for(path, text))
        return None

    def _summary(self, path: str, text: str, data: bytes) -> NoteSummary:
        base = {"path": path, "content_hash": _hash(data), "size": len(data)}
        if not path.lower().endswith(".md"):
            found = _DATE_IN_PATH.search(path)
            return NoteSummary(**base, date=found.group(1) if found else None)
        note = parse_note(path, text)
        return NoteSummary(
            **base,
            name=note.name,
            description=note.description,
            status=note.status,
            date=note.date,
            tags=note.tags,
            frontmatter=note.frontmatter,
        )

    def _relink(self, source: str) -> bool:
        data = self._read(source)
        if data is None or self.graph is None:
            return False
        try:
            text = self._decode(source, data)
        except RemeError:
            return False
        self.graph.set_links(source, self._link_resolver().links_for(source, text))
        return True

    def _forget(self, path: str) -> None:
        self.catalog.remove(path)
        self.keyword.delete(path)
        if self.graph is not None:
            self.graph.remove(path)
        if self.tags is not None:
            self.tags.remove(path)

    def _read(self, path: str) -> bytes | None:
        try:
            return (self.paths.root / path).read_bytes()
        except OSError:
            return None

    def _decode(self, path: str, data: bytes) -> str:
        if len(data) > self.max_file_bytes:
            raise _Unindexable(
                f"{path}: {len(data)} bytes is over index.max_file_bytes ({self.max_file_bytes})"
            )
        if b"\x00" in data[:8192]:
            raise _Unindexable(f"{path}: binary file (NUL bytes), not indexed")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _Unindexable(
                f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})"
            ) from None

    def _link_resolver(self) -> LinkResolver:
        if self._resolver is None:
            self._resolver = LinkResolver(self.scope_files())
        return self._resolver


class _Unindexable(RemeError):
    """A file in scope that cannot be indexed (binary, too large, not UTF-8)."""


def _hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
