"""The files the index covers, and reading, parsing and chunking those a pass changes, before any
index lock is taken.

``FilePreparation`` is the half of the ``Indexer`` that lists the scope (suffixes with a chunker,
minus the exclude globs and names no index can store) and turns bytes on disk into a ``Plan``: each
changed file read (confined to the workspace, never a FIFO or a second hard link), decoded,
summarised for the catalog (leniently when its frontmatter is broken), chunked and its links
resolved; and the notes whose links a new or vanished file may change, resolved again. The
indexer applies the plan to every projection (``reme_core.index.indexer``).
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from reme_core.components import Chunker, Graph
from reme_core.errors import FrontmatterError, RemeError
from reme_core.index.catalog import FileStat
from reme_core.schema import Chunk, Link, NoteSummary
from reme_core.workspace import LinkResolver, WorkspacePaths, parse_note
from reme_core.workspace.frontmatter import parse_frontmatter
from reme_core.workspace.notes import normalise_status, normalise_tags, note_date
from reme_core.workspace.paths import PathPatterns
from reme_core.workspace.wikilinks import may_resolve_to, target_names

_DATE_IN_PATH = re.compile(r"(?:^|/)(\d{4}-\d{2}-\d{2})(?:/|\.|$)")


@dataclass
class PreparedFile:
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

    def release(self) -> None:
        """Drop what was parsed (text, summary, chunks, links) once every projection has it,
        keeping the path and the problem or warning: a pass's later steps (the keyword build,
        the vector pass) then reuse that memory instead of the process growing past it."""
        self.text = None
        self.summary = None
        self.chunks = []
        self.links = None


@dataclass
class Plan:
    """Everything one pass changes, computed before any projection is touched."""

    files: list[PreparedFile]
    removed: list[str]
    relinks: dict[str, list[Link]] = field(default_factory=dict)
    vector_paths: list[str] = field(default_factory=list)
    clear_first: bool = False
    forget: list[str] = field(default_factory=list)
    """Paths neither on disk nor in the catalog that a projection still holds (orphans)."""
    pending: dict[str, tuple[bytes, FileStat | None]] = field(default_factory=dict)
    """Changed files not prepared yet (path -> bytes, stat): a first index's, prepared one at a time
    while the plan is applied (``FilePreparation.each_file``), so a pass never holds every
    parsed file at once (indexing 1,000 notes, benchmarks/embedder_memory.py: peak RSS
    keyword-only 105 -> 91 MB, hybrid 226 -> 217 MB)."""

    @property
    def empty(self) -> bool:
        return not (
            self.files
            or self.pending
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
            *self.pending,
            *self.removed,
            *self.forget,
            *self.relinks,
            *self.vector_paths,
        ]


class FilePreparation:
    """The files in scope, and what a pass changes, read with no index lock held: the
    ``Indexer``'s reading side (a base of it; ``Indexer.__init__`` sets the attributes below).

    Only writers prepare, one at a time, so what they read stays true until applied.
    """

    paths: WorkspacePaths
    chunkers: dict[str, Chunker]
    exclude: list[str]
    _excluded: PathPatterns
    graph: Graph | None
    max_file_bytes: int
    _root: str
    """``paths.root`` as a string, for the quick read of a plain file."""
    _resolver: LinkResolver | None
    _resolver_files: list[str] | None
    _dangling: dict[str, list[str]] | None

    # -- scope: the files the index covers ------------------------------------------------

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

    # -- preparing a pass ----------------------------------------------------------------------

    def _prepare(
        self,
        changed: Mapping[str, bytes],
        removed: Sequence[str],
        added: set[str],
        *,
        relink: bool = True,
        stats: Mapping[str, FileStat | None] | None = None,
        lazy: bool = False,
    ) -> Plan:
        """Everything a pass will change, with no index lock held (only writers change the
        projections, and they run one at a time, so what this reads stays true until applied).
        With ``lazy`` the changed files are left in ``Plan.pending``, parsed as they are
        applied."""
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
        if lazy:
            plan = Plan(files=[], removed=list(removed))
            plan.pending = {path: (data, stats.get(path)) for path, data in changed.items()}
        else:
            plan = Plan(
                files=[
                    self._prepare_file(path, data, stats.get(path))
                    for path, data in changed.items()
                ],
                removed=list(removed),
            )
        for source in sorted(sources - set(changed) - set(removed)):
            links = self._relinked(source)
            if links is not None:
                plan.relinks[source] = links
        return plan

    def each_file(self, plan: Plan) -> Iterator[PreparedFile]:
        """The plan's files, prepared first, then each pending one parsed as it is asked for:
        its bytes leave ``pending`` and the file joins ``files`` (as an eager plan's, so
        ``empty`` and ``touched`` say the same after the pass)."""
        yield from list(plan.files)
        pending = plan.pending
        while pending:
            path = next(iter(pending))
            data, file_stat = pending.pop(path)
            prepared = self._prepare_file(path, data, file_stat)
            plan.files.append(prepared)
            yield prepared

    def _prepare_file(self, path: str, data: bytes, file_stat: FileStat | None) -> PreparedFile:
        refusal = self.paths.refusal(path)
        if refusal is not None:
            return PreparedFile(path, problem=refusal)
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
            return PreparedFile(path, problem=str(exc))
        links = None
        if suffix == ".md" and self.graph is not None:
            links = self._link_resolver().links_for(path, text)
        return PreparedFile(
            path, summary, list(chunks), links, warning=warning, stat=file_stat, text=text
        )

    def _dangling_links(self) -> dict[str, list[str]]:
        if self._dangling is None:
            assert self.graph is not None
            dangling: dict[str, list[str]] = {}
            for link in self.graph.unresolved():
                dangling.setdefault(link.source, []).append(link.raw)
            self._dangling = dangling
        return self._dangling

    def _summary(self, path: str, text: str, data: bytes) -> NoteSummary:
        base = {"path": path, "content_hash": file_hash(data), "size": len(data)}
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
            content_hash=file_hash(data),
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
            data = read_plain(os.path.join(self._root, path), self.max_file_bytes)
        if data is None:
            # A link or a hard link: the full check decides; a FIFO or device is never read.
            st = stat_or_none(self.paths.root / path)
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
            raise Unindexable(
                f"{path}: {len(data)} bytes is over index.max_file_bytes ({self.max_file_bytes})"
            )
        if b"\x00" in data[:8192]:
            raise Unindexable(f"{path}: binary file (NUL bytes), not indexed")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise Unindexable(
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


class Unindexable(RemeError):
    """A file in scope that cannot be indexed (binary, too large, not UTF-8)."""


def read_plain(full: str, max_bytes: int) -> bytes | None:
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


def file_hash(data: bytes) -> str:
    """A file's content hash, as the catalog records it (SHA-256 hex)."""
    return hashlib.sha256(data).hexdigest()


def stat_or_none(path: os.PathLike[str] | str) -> os.stat_result | None:
    """``os.stat(path)``, following links; None when there is nothing to stat."""
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
