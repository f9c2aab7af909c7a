"""Keeps the catalog, keyword index, link graph and tag index in step with the files.

Change detection is by content hash. A scan first compares each file's stat (size, mtime, ctime,
inode, one hard link) with the one the catalog recorded beside the hash: a file whose stat is
unchanged is not read again, any other is read and hashed, and ``rebuild`` (``reme reindex``)
hashes every file whatever its stat. A stat is recorded only once it is older than the timestamp
granularity (``catalog.RACY_NS``), so an edit in the same tick as the read is never masked. One
scope (suffixes with a chunker, minus the exclude globs) serves the full scan, API writes and the
watcher alike.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from reme_core.components import Chunker, Graph, KeywordIndex, TagIndex
from reme_core.index import drift as drift_check
from reme_core.index.catalog import Catalog, FileStamp, FileStat, problem_message, stamp_of
from reme_core.index.prepare import (
    UNNAMABLE,
    FilePreparation,
    Plan,
    PreparedFile,
    file_hash,
    shown_name,
    stat_or_none,
    unnamable,
)
from reme_core.index.rwlock import ReadWriteLock
from reme_core.index.seal import SealAtClose, SealKeeper
from reme_core.schema import Chunk, Link
from reme_core.workspace import LinkResolver, WorkspacePaths
from reme_core.workspace.paths import PathPatterns

if TYPE_CHECKING:
    from reme_core.index.vectors import VectorIndex


class IndexReport(BaseModel):
    """What one indexing pass did."""

    indexed: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    unchanged: int = 0
    relinked: int = 0
    problems: dict[str, str] = Field(default_factory=dict)
    """Path -> what is wrong with it (the message does not repeat the path). A note whose only
    problem is its frontmatter is indexed anyway (body as text) and listed here too."""
    repaired: list[str] = Field(default_factory=list)
    """Unchanged paths applied again because the indexes disagreed about them (drift) or a pass
    was interrupted before persisting them; new and vanished files are in indexed/removed."""
    drift: list[str] = Field(default_factory=list)
    """The disagreements found before this pass repaired them (``reme status`` lines)."""
    seconds: float = 0.0
    """Wall time of the whole call, embedding included when it waited for it."""
    embed_seconds: float = 0.0
    """Of ``seconds``, the time spent embedding after the index pass (``Reme.index``)."""


class Indexer(FilePreparation):
    """Applies file changes to every projection; searches never wait for the slow part.

    Writers (``scan``, ``update``, ``rebuild``, ``optimize``) run one at a time under
    ``writers`` (reentrant: ``Reme.revert`` holds it around its own ``update``). Each prepares its
    changes with no index lock held: reads, hashes, parses and chunks the files, resolves their
    links and embeds new chunks through the embedding cache. It then applies them to the catalog,
    keyword index, tags, graph and vector store in one short exclusive hold of ``lock``. A first
    index (an empty catalog: no search has anything to be served) parses each file inside that
    hold instead, just before applying it, so it never holds every parsed note at once (its
    hold is longer: the parse, ~1 s for 1,000 notes here).
    Readers (search, links, status) hold ``lock`` shared, so many run at once and each sees every
    update whole or not at all. Every projection also locks itself, for callers outside these
    sections (the background vector pass, the file tools).
    """

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
        self._excluded = PathPatterns(self.exclude, visible_only=True)
        self.max_file_bytes = max_file_bytes
        self.lock = ReadWriteLock()
        """Shared for readers of the projections; exclusive while a pass applies its changes."""
        self.writers = threading.RLock()
        """Held by every pass from start to end: writes keep their order and never interleave."""
        self.vectors: VectorIndex | None = None
        """Set by the runtime when vectors are configured; ``update`` embeds before returning."""
        # The catalog holds every chunk's text already: an index may read them back from it.
        keyword.attach_text_source(catalog.chunk_texts)
        # ... and the catalog reads them from the notes, as spans checked against their digests.
        self._root = str(self.paths.root)
        catalog.attach_note_reader(self._note_text)
        self._resolver: LinkResolver | None = None
        self._resolver_files: list[str] | None = None
        """The scope a scan just listed, for the resolver when that scan needs one."""
        self._dangling: dict[str, list[str]] | None = None
        """Targets (raw) of each note's unresolved links, kept by the writers so that a new note
        does not cost a query of every unresolved link; None until needed and after a removal."""
        self.state_dir = catalog.db_path.parent
        self.drift_seal = SealKeeper(self.state_dir, self._state_files)
        """The seal over the state files, and what is known while it holds: a scan that finds
        it intact skips comparing ids (``reme_core.index.seal``)."""

    # -- passes ------------------------------------------------------------------------------

    def scan(self) -> IndexReport:
        """Incremental pass over the whole workspace: index what changed, drop what vanished,
        and repair drift: paths the projections disagree about, or that a pass interrupted by a
        crash left unpersisted somewhere, are applied again to every projection.

        A file whose stat matches the one recorded with its hash is not read; every other file
        is read and hashed, and only a changed hash re-indexes it.
        """
        with self.writers, self.sealed_write() as sealed:
            started = time.perf_counter()
            clock = time.time_ns()  # before any stat: what "settled" is measured against
            listing, odd = self._listing()
            on_disk = list(listing)
            known = self.drift_seal.stamps() if sealed else None
            if known is None:
                known = self.catalog.file_stamps()
            drift = drift_check.measure(self, on_disk, indexed=set(known), projections=not sealed)
            if drift.rebuild_interrupted:
                report = self.rebuild()  # lists (and reports) the odd names itself
                report.drift = drift.problems()
                report.seconds = time.perf_counter() - started
                return report
            repair = drift.repair_paths()
            self._fresh_resolver(on_disk)  # built only if something changed
            changed: dict[str, bytes] = {}
            stats: dict[str, FileStat | None] = {}
            restat: dict[str, FileStat | None] = {}
            repaired: list[str] = []
            to_read = _stat_changed(listing, known) | (repair & listing.keys())
            unchanged = len(listing) - len(to_read)
            digests = self.catalog.hashes(p for p in to_read if p in known)
            for path in sorted(to_read):
                st = listing[path]
                data = self._read(path)
                settled = FileStat.settled(st, clock)
                if data is not None and digests.get(path) == file_hash(data):
                    if path not in repair:
                        unchanged += 1
                        stamp = known[path]
                        recorded = FileStat(*stamp) if stamp[3] is not None else None
                        if settled != recorded:
                            restat[path] = settled
                        continue
                    repaired.append(path)
                changed[path] = data if data is not None else b""
                stats[path] = settled
            disk = set(on_disk)
            removed = sorted(set(known) - disk)
            # A first index (the catalog holds nothing a search could be served) parses each
            # file as it applies it (``Plan.pending``), never holding every parsed note at once.
            plan = self._prepare(
                changed, removed, added=disk - set(known), stats=stats, lazy=not known
            )
            del changed  # the files' bytes: the plan holds their text (or the bytes, pending)
            plan.forget = sorted(p for p in repair if p not in disk and p not in known)
            if self.vectors is not None and self.vectors.available:
                # Their vectors may be stale under the same chunk ids: store them again from the
                # cache. Other vector drift is repaired by the reconcile that follows a scan.
                plan.vector_paths = sorted({*repaired, *plan.forget})
            report = self._apply(plan)
            report.problems.update(self._record_unnamable(odd, complete=True))
            if restat:
                self.drift_seal.unsettle()
                self.catalog.set_stats(restat)
            again = set(repaired)
            report.indexed = [p for p in report.indexed if p not in again]
            report.repaired = sorted({*repaired, *plan.forget})
            report.drift = drift.problems()
            report.unchanged = unchanged
            if drift.agrees:  # checked (or sealed) and repaired nothing: the projections agree
                if not sealed:  # (when sealed, leaving ``sealed_write`` seals again)
                    self.drift_seal.seal()
                if plan.empty and not restat:
                    self.drift_seal.keep_stamps(known)  # what the catalog still holds
            report.seconds = time.perf_counter() - started
            return report

    def drift(self, on_disk: Sequence[str] | None = None) -> drift_check.Drift:
        """Where the catalog, the projections and the files disagree (ids only; see
        ``reme_core.index.drift``). Call under ``writers`` or the read side of ``lock``."""
        return drift_check.measure(self, on_disk)

    def update(self, changed: Iterable[str], removed: Iterable[str] = ()) -> IndexReport:
        """Index the named paths now (API writes, watcher events). Missing files count as removed.

        New chunks are embedded (when vectors are configured) before the changes are applied, so
        the paths are searchable by both arms when this returns.
        """
        with self.writers, self.sealed_write():
            started = time.perf_counter()
            resolver = self._link_resolver()
            known = self.catalog.hashes()
            clock = time.time_ns()
            changed, removed = list(changed), list(removed)
            # A name that is not UTF-8 (the watcher hands it over as the OS gave it) is never
            # read: it is a problem while it exists, forgotten once it is gone.
            odd = {p for p in (*changed, *removed) if unnamable(p)}
            odd_report: dict[str, str] = {}
            if odd:
                odd_report = self._record_unnamable(
                    [p for p in odd if stat_or_none(self.paths.root / p) is not None], gone=odd
                )
                changed = [p for p in changed if p not in odd]
            gone = {p for p in removed if p not in odd and self.in_scope(p)}
            todo: dict[str, bytes] = {}
            stats: dict[str, FileStat | None] = {}
            for path in dict.fromkeys(changed):
                if not self.in_scope(path):
                    continue
                st = stat_or_none(self.paths.root / path)
                if st is None or not stat.S_ISREG(st.st_mode):
                    gone.add(path)
                    continue
                data = self._read(path)
                if data is None or known.get(path) != file_hash(data):
                    todo[path] = data if data is not None else b""
                    stats[path] = FileStat.settled(st, clock)
            # Only paths the index knew about are removals worth reporting.
            gone = {p for p in gone if p in known}
            added = {p for p in todo if p not in known}
            for path in added:
                resolver.add(path)
            for path in gone:
                resolver.remove(path)
            plan = self._prepare(todo, sorted(gone), added=added, stats=stats)
            if self.vectors is not None and self.vectors.available:
                # The slow part of a write with vectors: the model runs while searches go on.
                self.vectors.prepare(c.vector_body for f in plan.files for c in f.chunks)
                plan.vector_paths = [*(f.path for f in plan.files), *plan.removed]
            report = self._apply(plan)
            report.problems.update(odd_report)
            report.unchanged = len(known) - len(set(todo) - added) - len(gone)
            report.seconds = time.perf_counter() - started
            return report

    def rebuild(self) -> IndexReport:
        """Drop every projection and index the workspace from scratch.

        Searches see the old projections until the new ones replace them in one step.
        """
        with self.writers, self.sealed_write():
            started = time.perf_counter()
            clock = time.time_ns()
            listing, odd = self._listing()  # each stat taken before its file is read
            self._fresh_resolver(list(listing))
            changed = {path: self._read(path) or b"" for path in listing}
            stats = {path: FileStat.settled(st, clock) for path, st in listing.items()}
            plan = self._prepare(changed, [], added=set(), relink=False, stats=stats)
            del changed  # the files' bytes: the plan holds their text, the keyword build is next
            plan.clear_first = True
            report = self._apply(plan)
            report.problems.update(self._record_unnamable(odd, complete=True))
            self.drift_seal.seal()  # every projection was filled from the notes
            report.seconds = time.perf_counter() - started
            return report

    def optimize(self) -> None:
        with self.writers, self.sealed_write():
            self.keyword.optimize()  # the keyword index locks itself; no reader sees a change
            self.keyword.flush()

    # -- the drift seal (``reme_core.index.seal``) ---------------------------------------------

    def seal_holds(self) -> bool:
        """Whether the state files are as they were when the projections last agreed."""
        return self.drift_seal.holds()

    def sealed_write(self) -> AbstractContextManager[bool]:
        """Around a writer (under ``writers``): yields whether the seal held just before it; the
        seal follows the write when it did (``SealKeeper.write``)."""
        return self.drift_seal.write()

    def before_close(self, busy: bool = False) -> SealAtClose:
        """Before any state file closes: whether the seal still holds (not while something
        ``busy`` writes outside the indexer's passes), and the catalog's stamps to save with it
        unless the ones on disk still describe the catalog."""
        return self.drift_seal.before_close(self.catalog.file_stamps, busy)

    def after_close(self, closing: SealAtClose) -> None:
        """Once every state file is closed: leave the seal for the next process when it held
        before closing, else remove the one on disk."""
        self.drift_seal.after_close(closing)

    def vectors_settled(self) -> bool:
        """Whether the vector store is known to match the catalog: the last vector pass under
        the seal found nothing to do, for the model in use, and the seal still holds."""
        vectors = self.vectors
        return (
            vectors is not None
            and vectors.available
            and vectors.model_id is not None
            and self.drift_seal.vectors_settled(vectors.model_id)
        )

    def settle_vectors(self, generation: int) -> None:
        """After a vector pass that found nothing to do, begun at the catalog's ``generation``:
        remember it while the seal holds (it does when that pass wrote nothing and no one else
        did), unless a write changed the catalog since the pass began (a write's embedding may
        have failed, leaving work the pass never saw)."""
        with self.writers:
            if (
                self.vectors is not None
                and self.catalog.generation == generation
                and self.seal_holds()
            ):
                self.drift_seal.settle_vectors(self.vectors.model_id)

    def _state_files(self) -> list[Path] | None:
        """Every file the drift check reads; None when a projection cannot name its own."""
        files = [self.catalog.db_path]
        for part in (self.keyword, self.graph, self.tags, self.vectors):
            if part is None:
                continue
            named = part.state_files()
            if named is None:
                return None
            files.extend(named)
        return files

    # -- names no projection can hold ----------------------------------------------------------

    def _record_unnamable(
        self, present: Iterable[str], *, complete: bool = False, gone: Iterable[str] = ()
    ) -> dict[str, str]:
        """Report files whose names are not valid UTF-8 as problems (under a printable form of
        the name), and forget the reports of those no longer there: of every earlier one when
        ``complete`` (a full listing), else of ``gone``. Writes only when something changed, so
        a scan that finds nothing new leaves the catalog (and the drift seal) untouched.
        Returns the problems for an ``IndexReport`` (shown name -> message)."""
        want = {shown_name(p): UNNAMABLE for p in present}
        have = {p for p, m in self.catalog.problems().items() if m == UNNAMABLE}
        stale = have - want.keys() if complete else {shown_name(p) for p in gone} - want.keys()
        for shown in stale & have:
            self.catalog.remove(shown)
        for shown in want.keys() - have:
            self.catalog.set_problem(shown, UNNAMABLE)
        return want

    # -- internals ---------------------------------------------------------------------------

    def _apply(self, plan: Plan) -> IndexReport:
        """Apply ``plan`` to every projection in one exclusive hold: no reader sees it half done."""
        report = IndexReport()
        if plan.empty:  # e.g. a watcher event for a file saved unchanged: readers go on
            self.keyword.flush()
            return report
        self.drift_seal.unsettle()
        # Intent first: a process killed before every projection has persisted this pass leaves
        # these paths listed, and the next scan applies them again (see Catalog.begin_pass).
        touched = plan.touched()
        self.catalog.begin_pass(touched, rebuild=plan.clear_first)
        with self.lock.write(), self._forgetting_dangling_on_error():
            if plan.clear_first:
                self._clear()
            for path in plan.removed:
                self._forget(path)
                report.removed.append(path)
            for path in plan.forget:
                self._forget(path)
            for prepared in self.each_file(plan):
                if prepared.problem is not None:
                    message = problem_message(prepared.path, prepared.problem)
                    self._forget(prepared.path)
                    self.catalog.set_problem(prepared.path, message)
                    report.problems[prepared.path] = message
                    continue
                self._put(prepared)
                prepared.release()  # every projection holds what it needs of it now
                report.indexed.append(prepared.path)
                if prepared.warning is not None:
                    message = problem_message(prepared.path, prepared.warning)
                    self.catalog.set_problem(prepared.path, message)
                    report.problems[prepared.path] = message
            for source, links in plan.relinks.items():
                self._set_links(source, links)
                report.relinked += 1
            if self.vectors is not None and plan.vector_paths:
                self.vectors.apply(plan.vector_paths)
        # Rebuilding the keyword index's incremental state is the writer's cost, not the next
        # search's; persisting is slower and changes nothing a reader sees: both after the hold.
        self.keyword.refresh()
        self.keyword.flush()
        if self.vectors is not None and plan.vector_paths:
            self.vectors.flush()
        self.catalog.end_pass(touched, rebuild=plan.clear_first)
        return report

    def _put(self, prepared: PreparedFile) -> None:
        assert prepared.summary is not None
        self.catalog.put(prepared.summary, prepared.chunks, prepared.stat, prepared.text)
        self.keyword.upsert(prepared.path, keyword_chunks(prepared.chunks))
        if self.tags is not None:
            self.tags.set_tags(prepared.path, prepared.summary.tags)
        if prepared.links is not None:
            self._set_links(prepared.path, prepared.links)

    def _set_links(self, source: str, links: list[Link]) -> None:
        assert self.graph is not None
        self.graph.set_links(source, links)
        if self._dangling is not None:
            targets = [link.raw for link in links if link.state != "resolved"]
            if targets:
                self._dangling[source] = targets
            else:
                self._dangling.pop(source, None)

    @contextmanager
    def _forgetting_dangling_on_error(self) -> Iterator[None]:
        try:
            yield
        except BaseException:
            self._dangling = None  # the graph may hold part of the pass: read it again
            raise

    def _clear(self) -> None:
        self.catalog.clear()
        self.keyword.clear()
        if self.graph is not None:
            self.graph.clear()
            self._dangling = None
        if self.tags is not None:
            self.tags.clear()
        if self.vectors is not None:
            self.vectors.clear()  # re-stored from the embedding cache by the next reconcile

    def _forget(self, path: str) -> None:
        self.catalog.remove(path)
        self.keyword.delete(path)
        if self.graph is not None:
            self.graph.remove(path)
            self._dangling = None  # links to ``path`` from other notes became unresolved
        if self.tags is not None:
            self.tags.remove(path)


def _stat_changed(
    listing: Mapping[str, os.stat_result | None], known: Mapping[str, FileStamp]
) -> set[str]:
    """The listed files that must be read: new to the catalog, or their stat is not the one
    recorded with their hash (a second hard link, or no stat, always counts as changed)."""
    changed = set()
    recorded = known.get
    for path, st in listing.items():
        stamp = stamp_of(st) if st is not None else None
        if stamp is None or recorded(path) != stamp:
            changed.add(path)
    return changed


def keyword_chunks(chunks: Sequence[Chunk]) -> list[Chunk]:
    """``chunks`` as the keyword arm indexes them: each one's ``keyword_body`` as its text."""
    return [
        c if c.keyword_text is None else c.model_copy(update={"text": c.keyword_text})
        for c in chunks
    ]
