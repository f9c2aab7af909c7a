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

import hashlib
import os
import re
import stat
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from reme_core.components import Chunker, Graph, KeywordIndex, TagIndex
from reme_core.errors import FrontmatterError, RemeError
from reme_core.index import drift as drift_check
from reme_core.index import seal
from reme_core.index.catalog import Catalog, FileStamp, FileStat, problem_message, stamp_of
from reme_core.index.rwlock import ReadWriteLock
from reme_core.schema import Chunk, Link, NoteSummary
from reme_core.workspace import LinkResolver, WorkspacePaths, parse_note
from reme_core.workspace.frontmatter import parse_frontmatter
from reme_core.workspace.notes import normalise_status, normalise_tags, note_date
from reme_core.workspace.paths import PathPatterns
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


@dataclass
class _PreparedFile:
    """One changed file, read and parsed, ready to apply; or why it cannot be indexed."""

    path: str
    summary: NoteSummary | None = None
    chunks: list[Chunk] = field(default_factory=list)
    links: list[Link] | None = None  # None: no graph, or not a note
    problem: str | None = None
    """Why the file cannot be indexed at all."""
    warning: str | None = None
    """A problem that still lets the file be indexed (broken frontmatter: the text is indexed)."""
    stat: FileStat | None = None
    """The file's stat taken before it was read, recorded beside its hash (None: not settled)."""
    text: str | None = None
    """The text the chunks came from: the catalog keeps chunk texts as spans of it."""


@dataclass
class _Plan:
    """Everything one pass changes, computed before any projection is touched."""

    files: list[_PreparedFile]
    removed: list[str]
    relinks: dict[str, list[Link]] = field(default_factory=dict)
    vector_paths: list[str] = field(default_factory=list)
    clear_first: bool = False
    forget: list[str] = field(default_factory=list)
    """Paths neither on disk nor in the catalog that a projection still holds (orphans)."""

    @property
    def empty(self) -> bool:
        return not (
            self.files
            or self.removed
            or self.relinks
            or self.clear_first
            or self.forget
            or self.vector_paths
        )

    def touched(self) -> list[str]:
        """Every path this plan changes in some projection."""
        return [
            *(f.path for f in self.files),
            *self.removed,
            *self.forget,
            *self.relinks,
            *self.vector_paths,
        ]


class Indexer:
    """Applies file changes to every projection; searches never wait for the slow part.

    Writers (``scan``, ``update``, ``rebuild``, ``optimize``) run one at a time under
    ``writers`` (reentrant: ``Reme.revert`` holds it around its own ``update``). Each prepares its
    changes with no index lock held: reads, hashes, parses and chunks the files, resolves their
    links and embeds new chunks through the embedding cache. It then applies them to the catalog,
    keyword index, tags, graph and vector store in one short exclusive hold of ``lock``.
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
        on_disk = seal.load(self.state_dir)
        self._sealed_on_disk = on_disk.files if on_disk else None
        self._seal = self._sealed_on_disk
        """The state files as they were when the projections last agreed (None: not known); a
        scan that finds them so skips comparing ids (``reme_core.index.seal``)."""
        # What is known only while the seal has held throughout; ``_unsettle`` forgets it when
        # a writer finds the seal broken, and before the catalog changes.
        self._stamps: dict[str, FileStamp] | None = None
        """The catalog's file stamps as a scan that changed nothing read them."""
        self._disk_stamps = on_disk.stamps if on_disk else None
        """The digest of the stamps saved with the seal on disk."""
        self._disk_stamps_current = self._disk_stamps is not None
        """Whether those stamps still describe the catalog (read at the first sealed scan)."""
        self._settled_on_disk = on_disk.vectors if on_disk else None
        self._vectors_settled = self._settled_on_disk
        """The embedding model whose vectors the last vector pass under the seal found matching
        the catalog (None: not known): while the seal holds, there is no vector pass to run."""

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
        excluded = self._excluded
        for depth in range(1, len(parts)):
            folder = "/".join(parts[:depth])
            if excluded(folder) or excluded(folder + "/"):
                return False
        return not excluded(path)

    def scope_files(self) -> list[str]:
        """Every file in scope, sorted; names that are not valid UTF-8 are left out (see
        ``unnamable``): no projection can hold them."""
        files = self.paths.iter_files(tuple(self.chunkers), self.exclude)
        return sorted(p for p in files if not unnamable(p))

    def scope_stats(self) -> dict[str, os.stat_result | None]:
        """Every file in scope with its stat, sorted by path (names as in ``scope_files``)."""
        return self._listing()[0]

    def _listing(self) -> tuple[dict[str, os.stat_result | None], list[str]]:
        """``scope_stats``, and the names it left out as not valid UTF-8."""
        listing = self.paths.file_stats(tuple(self.chunkers), self.exclude)
        bad = [p for p in listing if unnamable(p)]
        for path in bad:
            del listing[path]
        return listing, bad

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
            known = self._sealed_stamps() if sealed else None
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
                if data is not None and digests.get(path) == _hash(data):
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
            plan = self._prepare(changed, removed, added=disk - set(known), stats=stats)
            plan.forget = sorted(p for p in repair if p not in disk and p not in known)
            if self.vectors is not None and self.vectors.available:
                # Their vectors may be stale under the same chunk ids: store them again from the
                # cache. Other vector drift is repaired by the reconcile that follows a scan.
                plan.vector_paths = sorted({*repaired, *plan.forget})
            report = self._apply(plan)
            report.problems.update(self._record_unnamable(odd, complete=True))
            if restat:
                self._unsettle()
                self.catalog.set_stats(restat)
            again = set(repaired)
            report.indexed = [p for p in report.indexed if p not in again]
            report.repaired = sorted({*repaired, *plan.forget})
            report.drift = drift.problems()
            report.unchanged = unchanged
            if drift.agrees:  # checked (or sealed) and repaired nothing: the projections agree
                if not sealed:  # (when sealed, leaving ``sealed_write`` seals again)
                    self._seal = self._current_seal()
                if plan.empty and not restat:
                    self._stamps = known  # what the catalog still holds
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
                    [p for p in odd if _stat(self.paths.root / p) is not None], gone=odd
                )
                changed = [p for p in changed if p not in odd]
            gone = {p for p in removed if p not in odd and self.in_scope(p)}
            todo: dict[str, bytes] = {}
            stats: dict[str, FileStat | None] = {}
            for path in dict.fromkeys(changed):
                if not self.in_scope(path):
                    continue
                st = _stat(self.paths.root / path)
                if st is None or not stat.S_ISREG(st.st_mode):
                    gone.add(path)
                    continue
                data = self._read(path)
                if data is None or known.get(path) != _hash(data):
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
                self.vectors.prepare(c.text for f in plan.files for c in f.chunks)
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
            plan.clear_first = True
            report = self._apply(plan)
            report.problems.update(self._record_unnamable(odd, complete=True))
            self._seal = self._current_seal()  # every projection was filled from the notes
            report.seconds = time.perf_counter() - started
            return report

    def optimize(self) -> None:
        with self.writers, self.sealed_write():
            self.keyword.optimize()  # the keyword index locks itself; no reader sees a change
            self.keyword.flush()

    # -- the drift seal ------------------------------------------------------------------------

    def seal_holds(self) -> bool:
        """Whether the state files are as they were when the projections last agreed."""
        return self._seal is not None and self._current_seal() == self._seal

    @contextmanager
    def sealed_write(self) -> Iterator[bool]:
        """Around a writer (under ``writers``): the seal follows reme's own writes when it held
        just before them, which is what this yields. A write that fails half-way leaves nothing
        sealed; one that began unsealed leaves sealing to the pass (a clean check, a rebuild)."""
        held = self.seal_holds()
        self._seal = None
        if not held:  # something else changed the state: nothing known under the seal holds
            self._unsettle()
        yield held
        if held:
            self._seal = self._current_seal()

    def before_close(self, busy: bool = False) -> SealAtClose:
        """Before any state file closes: whether the seal still holds (not while something
        ``busy`` writes outside the indexer's passes), and the catalog's stamps to save with it
        unless the ones on disk still describe the catalog."""
        current = None if busy else self._current_seal()
        if current is None or current != self._seal:
            return SealAtClose(held=False)
        stamps = None
        if not self._disk_stamps_current:
            stamps = self._stamps or self.catalog.file_stamps()
        return SealAtClose(held=True, stamps=stamps, vectors=self._vectors_settled)

    def after_close(self, closing: SealAtClose) -> None:
        """Once every state file is closed: leave the seal for the next process when it held
        before closing (taken now: closing may write, as zvec rewrites its index file), else
        remove the one on disk. Nothing is written when nothing changed."""
        files = self._state_files() if closing.held else None
        if files is None:
            seal.drop(self.state_dir)
            return
        taken = seal.take(self.state_dir, files)
        if (
            closing.stamps is None
            and taken == self._sealed_on_disk
            and closing.vectors == self._settled_on_disk
        ):
            return
        kept = self._disk_stamps if closing.stamps is None else None
        seal.save(self.state_dir, taken, closing.stamps, closing.vectors, kept_stamps=kept)

    def vectors_settled(self) -> bool:
        """Whether the vector store is known to match the catalog: the last vector pass under
        the seal found nothing to do, for the model in use, and the seal still holds."""
        vectors = self.vectors
        return (
            vectors is not None
            and vectors.available
            and vectors.model_id is not None
            and self._vectors_settled == vectors.model_id
            and self.seal_holds()
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
                self._vectors_settled = self.vectors.model_id

    def _sealed_stamps(self) -> dict[str, FileStamp] | None:
        """The catalog's file stamps without reading the catalog: as the last scan that changed
        nothing read them, or as saved with the seal on disk (read once). Call while the seal
        holds."""
        if self._stamps is None and self._disk_stamps_current and self._disk_stamps:
            self._stamps = seal.load_stamps(self.state_dir, self._disk_stamps)
            self._disk_stamps_current = self._stamps is not None
        return self._stamps

    def _unsettle(self) -> None:
        """Forget what is known only while the seal has held: before the catalog changes (the
        stamps kept or saved no longer describe it, and the vectors may not match it any more,
        or a model may fail to embed the change), and when a writer finds the seal broken."""
        self._stamps = None
        self._disk_stamps_current = False
        self._vectors_settled = None

    def _current_seal(self) -> seal.Seal | None:
        files = self._state_files()
        return None if files is None else seal.take(self.state_dir, files)

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

    def _prepare(
        self,
        changed: Mapping[str, bytes],
        removed: Sequence[str],
        added: set[str],
        *,
        relink: bool = True,
        stats: Mapping[str, FileStat | None] | None = None,
    ) -> _Plan:
        """Everything a pass will change, with no index lock held (only writers change the
        projections, and they run one at a time, so what this reads stays true until applied)."""
        sources: set[str] = set()
        if relink and self.graph is not None:
            for path in removed:
                sources.update(link.source for link in self.graph.inbound(path))
            if added:
                # Only notes with a dangling link that could now point at a new file: rereading
                # every note with any dangling link made each new note cost O(workspace).
                names = target_names(added)
                sources.update(
                    source
                    for source, targets in self._dangling_links().items()
                    if any(may_resolve_to(raw, names) for raw in targets)
                )
        stats = stats or {}
        plan = _Plan(
            files=[
                self._prepare_file(path, data, stats.get(path)) for path, data in changed.items()
            ],
            removed=list(removed),
        )
        for source in sorted(sources - set(changed) - set(removed)):
            links = self._relinked(source)
            if links is not None:
                plan.relinks[source] = links
        return plan

    def _prepare_file(self, path: str, data: bytes, file_stat: FileStat | None) -> _PreparedFile:
        refusal = self.paths.refusal(path)
        if refusal is not None:
            return _PreparedFile(path, problem=refusal)
        warning = None
        try:
            text = self._decode(path, data)
            suffix = PurePosixPath(path).suffix.lower()
            try:
                summary = self._summary(path, text, data)
            except FrontmatterError as exc:
                # The note's text is still worth finding: index it (the chunker reads a broken
                # block as text, or skips a closed one) with the fields that did parse.
                summary = self._lenient_summary(path, text, data)
                warning = f"{exc}; the text is indexed without its frontmatter fields"
            chunks = self.chunkers[suffix].chunk(path, text)
        except RemeError as exc:
            return _PreparedFile(path, problem=str(exc))
        links = None
        if suffix == ".md" and self.graph is not None:
            links = self._link_resolver().links_for(path, text)
        return _PreparedFile(
            path, summary, list(chunks), links, warning=warning, stat=file_stat, text=text
        )

    def _apply(self, plan: _Plan) -> IndexReport:
        """Apply ``plan`` to every projection in one exclusive hold: no reader sees it half done."""
        report = IndexReport()
        if plan.empty:  # e.g. a watcher event for a file saved unchanged: readers go on
            self.keyword.flush()
            return report
        self._unsettle()
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
            for prepared in plan.files:
                if prepared.problem is not None:
                    message = problem_message(prepared.path, prepared.problem)
                    self._forget(prepared.path)
                    self.catalog.set_problem(prepared.path, message)
                    report.problems[prepared.path] = message
                    continue
                self._put(prepared)
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

    def _put(self, prepared: _PreparedFile) -> None:
        assert prepared.summary is not None
        self.catalog.put(prepared.summary, prepared.chunks, prepared.stat, prepared.text)
        self.keyword.upsert(prepared.path, prepared.chunks)
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

    def _dangling_links(self) -> dict[str, list[str]]:
        if self._dangling is None:
            assert self.graph is not None
            dangling: dict[str, list[str]] = {}
            for link in self.graph.unresolved():
                dangling.setdefault(link.source, []).append(link.raw)
            self._dangling = dangling
        return self._dangling

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

    def _lenient_summary(self, path: str, text: str, data: bytes) -> NoteSummary:
        """The catalog row of a note whose frontmatter is broken: whatever fields still parse
        (none when the YAML itself is broken), the rest as for a note without frontmatter."""
        try:
            fm, _ = parse_frontmatter(text, path)
        except FrontmatterError:
            fm = {}
        try:
            status = normalise_status(fm.get("status"), path)
        except FrontmatterError:
            status = "active"
        try:
            tags = normalise_tags(fm.get("tags"), path)
        except FrontmatterError:
            tags = []
        return NoteSummary(
            path=path,
            content_hash=_hash(data),
            size=len(data),
            name=_text(fm.get("name")) or _stem(path),
            description=_text(fm.get("description")),
            status=status,
            date=note_date(path, fm.get("date")),
            tags=tags,
            frontmatter=fm,
        )

    def _relinked(self, source: str) -> list[Link] | None:
        """The links of ``source`` resolved again; None when it cannot be read."""
        data = self._read(source)
        if data is None or self.graph is None:
            return None
        try:
            text = self._decode(source, data)
        except RemeError:
            return None
        return self._link_resolver().links_for(source, text)

    def _forget(self, path: str) -> None:
        self.catalog.remove(path)
        self.keyword.delete(path)
        if self.graph is not None:
            self.graph.remove(path)
            self._dangling = None  # links to ``path`` from other notes became unresolved
        if self.tags is not None:
            self.tags.remove(path)

    def _read(self, path: str) -> bytes | None:
        if self.paths.refusal(path) is not None:
            return None  # a link into .reme/ or out of the workspace, a hard link: never read
        try:
            return (self.paths.root / path).read_bytes()
        except OSError:
            return None

    def _note_text(self, path: str) -> str | None:
        """A note's current text, read as indexing reads it (None: unreadable or refused).

        Search reads its hits' notes through this, so a plain file (not a link, one hard link,
        not too big) is read with a few system calls, without the full confinement check
        (``refusal`` resolves every folder): the catalog serves a text only when it is the one
        indexed from inside the workspace (its digest), and a FIFO or device is never read.
        """
        data = None
        if not os.path.isabs(path) and ".." not in path.split("/"):
            data = _read_plain(os.path.join(self._root, path), self.max_file_bytes)
        if data is None:
            # A link or a hard link: the full check decides; a FIFO or device is never read.
            st = _stat(self.paths.root / path)
            if st is None or not stat.S_ISREG(st.st_mode):
                return None
            data = self._read(path)
        if data is None:
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
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

    def _fresh_resolver(self, files: list[str]) -> None:
        """Resolve links against ``files`` from now on (the scope just listed)."""
        self._resolver = None
        self._resolver_files = files

    def _link_resolver(self) -> LinkResolver:
        if self._resolver is None:
            files, self._resolver_files = self._resolver_files, None
            self._resolver = LinkResolver(files if files is not None else self.scope_files())
        return self._resolver


UNNAMABLE = "file name is not valid UTF-8 (shown with \\x escapes): not indexed; rename it"
"""The problem recorded for a file whose name the OS gave as undecodable bytes."""


def unnamable(path: str) -> bool:
    """Whether ``path`` holds undecodable bytes (surrogate escapes) that no index can store."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def shown_name(path: str) -> str:
    """A printable, storable form of ``path``: undecodable bytes as ``\\xNN`` escapes."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


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


@dataclass(frozen=True)
class SealAtClose:
    """What ``Indexer.before_close`` found, for ``after_close``."""

    held: bool
    stamps: dict[str, FileStamp] | None = None
    """The catalog's stamps to save with a new seal; None: keep the seal on disk as it is."""
    vectors: str | None = None
    """The model whose vectors are settled (``Indexer.vectors_settled``), saved with the seal."""


class _Unindexable(RemeError):
    """A file in scope that cannot be indexed (binary, too large, not UTF-8)."""


def _read_plain(full: str, max_bytes: int) -> bytes | None:
    """The bytes of a regular file with one link and at most ``max_bytes``; None for anything
    else (a symlink is not followed, a FIFO does not block the open)."""
    try:
        fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1 or st.st_size > max_bytes:
            return None
        chunks = []
        while chunk := os.read(fd, max(st.st_size, 1 << 16)):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _stat(path: os.PathLike[str] | str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:
        return None


def _stem(path: str) -> str:
    """A note's name when its frontmatter gives none: the file name without ``.md``."""
    name = PurePosixPath(path).name
    return name[:-3] if name.lower().endswith(".md") else name


def _text(value: object) -> str | None:
    text = str(value).strip() if value is not None else ""
    return text or None
