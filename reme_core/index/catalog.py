"""SQLite catalog of indexed files and their chunks (WAL mode, under ``.reme/``).

The catalog is the indexer's memory of what it has seen: a file whose content hash matches its row
is skipped. It also answers filter queries (status, dates, paths) for the search arms.

Writes go through one connection, one at a time. Reads borrow a connection of their own from a
small pool, so concurrent searches query in parallel (WAL readers never block each other or the
writer) and each read sees only committed transactions: a ``put`` whole or not at all.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import sqlite3
import threading
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import NamedTuple

from reme_core.index import spans
from reme_core.index.spans import NoteReader
from reme_core.index.sqlite_pool import ReadPool, compact
from reme_core.schema import Chunk, NoteSummary
from reme_core.schema.chunk import chunk_id
from reme_core.workspace.paths import path_matches

log = logging.getLogger(__name__)

SCHEMA_VERSION = 3
"""2: the file's stat (mtime, ctime, inode) beside its content hash; 3: chunk texts as spans of
their note (``spans``), chunks keyed by (path, ordinal)."""
CHANGE_LOG = 1024
"""Changes remembered for ``changed_since``: callers more changes behind recompute from scratch."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS notes (
    path TEXT PRIMARY KEY,
    content_hash TEXT NOT NULL,
    size INTEGER NOT NULL,
    name TEXT,
    description TEXT,
    status TEXT NOT NULL DEFAULT 'active',
    date TEXT,
    tags TEXT NOT NULL DEFAULT '[]',
    frontmatter TEXT NOT NULL DEFAULT '{}',
    mtime_ns INTEGER,
    ctime_ns INTEGER,
    inode INTEGER
);
CREATE INDEX IF NOT EXISTS notes_status ON notes(status);
CREATE INDEX IF NOT EXISTS notes_date ON notes(date);
CREATE TABLE IF NOT EXISTS problems (path TEXT PRIMARY KEY, message TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS unsettled (path TEXT PRIMARY KEY);
"""
# A chunk's id is "<path>#<ordinal>": the key says it, no id column or second index repeats it.
# Its text is a span of the note (reme_core.index.spans), stored whole only when it is not one.
_CHUNKS_SCHEMA = """
CREATE TABLE IF NOT EXISTS chunks (
    path TEXT NOT NULL REFERENCES notes(path) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    heading TEXT NOT NULL DEFAULT '',
    digest BLOB NOT NULL,
    span_start INTEGER,
    span_end INTEGER,
    prefixed INTEGER NOT NULL DEFAULT 0,
    text TEXT,
    PRIMARY KEY (path, ordinal)
) WITHOUT ROWID;
"""
_CHUNK_COLUMNS = (
    "path, ordinal, start_line, end_line, heading, digest, span_start, span_end, prefixed, text"
)
_REBUILDING = "rebuilding"
"""Meta key present while a rebuild is applied: one that never finished is done again."""
_NOTE_COLUMNS = "path, content_hash, size, name, description, status, date, tags, frontmatter"
_STAT_COLUMNS = ("mtime_ns", "ctime_ns", "inode")

RACY_NS = 2_000_000_000
"""A stat whose mtime or ctime is this close to when it was taken is not recorded: a change in
the same timestamp tick (2 s on FAT, 1 s on ext3 and HFS+) would keep the same stat."""


class FileStat(NamedTuple):
    """What the indexer compares before hashing a file: an unchanged stat means unchanged content.

    Change detection is by content hash; a stat that still matches the one recorded with the hash
    only lets a scan skip re-reading the file. Any difference (size, mtime, ctime, inode, a second
    hard link) means the file is read and hashed; ``reme reindex`` hashes every file whatever its
    stat.
    """

    size: int
    mtime_ns: int
    ctime_ns: int
    inode: int

    @classmethod
    def of(cls, st: os.stat_result) -> FileStat:
        return cls(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)

    @classmethod
    def settled(cls, st: os.stat_result | None, before_ns: int) -> FileStat | None:
        """The stat worth recording for a file stat'ed after ``before_ns`` (a clock reading taken
        before the stat): None when there is none, or it changed within ``RACY_NS`` of then."""
        if st is None or max(st.st_mtime_ns, st.st_ctime_ns) > before_ns - RACY_NS:
            return None
        return cls.of(st)

    def matches(self, st: os.stat_result) -> bool:
        """Whether ``st`` is this stat again, for a file with no other hard link."""
        return (
            st.st_size == self.size
            and st.st_mtime_ns == self.mtime_ns
            and st.st_ctime_ns == self.ctime_ns
            and st.st_ino == self.inode
            and st.st_nlink == 1
        )


class NoteLabel(NamedTuple):
    """What a search shows of a note beside a hit or a linked note."""

    name: str | None
    description: str | None


class HitRow(NamedTuple):
    """A chunk as a search hit shows it, with its note's name."""

    path: str
    start_line: int
    end_line: int
    heading: str
    text: str
    name: str | None


class _ChunkRow(NamedTuple):
    """A chunk as the catalog stores it (``_CHUNK_COLUMNS``), its span decoded."""

    path: str
    ordinal: int
    start_line: int
    end_line: int
    heading: str
    digest: bytes
    span: spans.Span | None
    text: str | None

    @classmethod
    def of(cls, row: tuple) -> _ChunkRow:
        path, ordinal, start_line, end_line, heading, digest, start, end, prefixed, text = row
        span = spans.span_of(start, end, prefixed)
        return cls(path, ordinal, start_line, end_line, heading, digest, span, text)


class FileState(NamedTuple):
    """A catalog row as the scan needs it: the content hash and the stat recorded with it."""

    content_hash: str
    stat: FileStat | None


FileStamp = tuple[int, int | None, int | None, int | None]
"""The stat recorded with a file's hash as ``Catalog.file_stamps`` gives it: size, mtime_ns,
ctime_ns and inode (the last three None when none was recorded)."""


def stamp_of(st: os.stat_result) -> FileStamp | None:
    """What a recorded ``FileStamp`` must equal for the file to count as unchanged (None for a
    file with another hard link: never unchanged by its stat). ``FileStat.matches`` in a form the
    scan compares 10k times with one tuple comparison each."""
    if st.st_nlink != 1:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


_IN_BATCH = 500
"""Paths bound per ``IN (...)``: SQLite's default limit on bound parameters is 999."""


def _rows_of_paths(
    db: sqlite3.Connection,
    sql: str,
    paths: Iterable[str] | None,
    *,
    column: str = "path",
    joiner: str = "WHERE",
    order: str = "",
    params: Sequence[object] = (),
) -> list[tuple]:
    """The rows of ``sql``: all of them when ``paths`` is None, else those whose ``column`` is
    one of ``paths`` (``joiner`` adds the condition: ``WHERE``, or ``AND`` after a WHERE), in
    batches of ``_IN_BATCH``; ``order`` (an ``ORDER BY``) applies within each batch."""
    tail = f" {order}" if order else ""
    if paths is None:
        return db.execute(sql + tail, params).fetchall()
    wanted = list(dict.fromkeys(paths))
    rows: list[tuple] = []
    for start in range(0, len(wanted), _IN_BATCH):
        batch = wanted[start : start + _IN_BATCH]
        marks = ",".join("?" * len(batch))
        query = f"{sql} {joiner} {column} IN ({marks}){tail}"
        rows += db.execute(query, [*params, *batch]).fetchall()
    return rows


class Catalog:
    """Rows per indexed file and per chunk. Safe to call from the API and the watcher thread."""

    def __init__(self, db_path: Path):
        db_path.parent.mkdir(parents=True, exist_ok=True)
        self.db_path = db_path
        self._lock = threading.RLock()
        self._db = sqlite3.connect(db_path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA foreign_keys=ON")
        self._db.executescript(_SCHEMA)
        _migrate_chunks(self._db, db_path)
        self._db.executescript(_CHUNKS_SCHEMA)
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(notes)")}
        for column in _STAT_COLUMNS:  # a version 1 catalog: stats are recorded from now on
            if column not in columns:
                self._db.execute(f"ALTER TABLE notes ADD COLUMN {column} INTEGER")
        # Written only when it changes: opening a workspace writes nothing (the drift seal).
        found = self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if found is None or found[0] != str(SCHEMA_VERSION):
            self._db.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?)",
                (str(SCHEMA_VERSION),),
            )
        self.generation = 0
        """Bumped on every change, so callers can cache answers derived from the catalog."""
        self._changes: deque[tuple[int, str]] = deque(maxlen=CHANGE_LOG)
        self._changes_floor = 0  # changed_since(g) is known for every g from here on
        self._pool = ReadPool(db_path)
        self._read_note: NoteReader | None = None

    def attach_note_reader(self, read: NoteReader) -> None:
        """Read chunk texts back from the notes through ``read`` (the indexer's, confined to the
        workspace); until then texts are stored whole and spans cannot be read."""
        self._read_note = read

    def close(self) -> None:
        with self._lock:
            self._pool.close()
            self._db.close()

    # -- writes ------------------------------------------------------------------------------

    def put(
        self,
        note: NoteSummary,
        chunks: Sequence[Chunk],
        stat: FileStat | None = None,
        text: str | None = None,
    ) -> None:
        """Replace the row of ``note.path`` and all its chunks, in one transaction. ``stat``:
        the file's stat taken before it was read (None: the next scan hashes it again).
        ``text``: the note's text the chunks came from; chunk texts found in it are kept as
        spans of the note (read back through the attached note reader), the others whole."""
        kept = spans.store(chunks, text if self._read_note is not None else None)
        with self._lock:
            with self._tx():
                self._put(note, chunks, stat, kept)
            self._changed(note.path)

    def _put(
        self,
        note: NoteSummary,
        chunks: Sequence[Chunk],
        stat: FileStat | None,
        kept: Sequence[spans.StoredText],
    ) -> None:
        self._db.execute("DELETE FROM chunks WHERE path = ?", (note.path,))
        self._db.execute(
            f"INSERT OR REPLACE INTO notes({_NOTE_COLUMNS}, {', '.join(_STAT_COLUMNS)})"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                note.path,
                note.content_hash,
                note.size,
                note.name,
                note.description,
                note.status,
                note.date.isoformat() if note.date else None,
                json.dumps(note.tags),
                json.dumps(note.frontmatter, default=str),
                *_stat_values(stat),
            ),
        )
        self._db.executemany(
            f"INSERT INTO chunks({_CHUNK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    c.path,
                    c.ordinal,
                    c.start_line,
                    c.end_line,
                    c.heading,
                    k.digest,
                    *spans.span_columns(k),
                    k.text,
                )
                for c, k in zip(chunks, kept, strict=True)
            ],
        )
        self._db.execute("DELETE FROM problems WHERE path = ?", (note.path,))

    def set_stats(self, stats: Mapping[str, FileStat | None]) -> None:
        """Record the stats of files a scan found unchanged by content (their stat had changed:
        a touch, a copy back), so the next scan need not hash them again."""
        if not stats:
            return
        with self._lock, self._tx():
            self._db.executemany(
                "UPDATE notes SET mtime_ns = ?, ctime_ns = ?, inode = ? WHERE path = ?",
                [(*_stat_values(stat), path) for path, stat in stats.items()],
            )

    def remove(self, path: str) -> None:
        with self._lock:
            with self._tx():
                self._db.execute("DELETE FROM chunks WHERE path = ?", (path,))
                self._db.execute("DELETE FROM notes WHERE path = ?", (path,))
                self._db.execute("DELETE FROM problems WHERE path = ?", (path,))
            self._changed(path)

    def clear_problem(self, path: str, prefix: str) -> None:
        """Forget the problem of ``path`` if its message starts with ``prefix`` (one part of
        the index reporting a problem it no longer has leaves the others' reports alone)."""
        with self._lock:
            self._db.execute(
                "DELETE FROM problems WHERE path = ? AND substr(message, 1, ?) = ?",
                (path, len(prefix), prefix),
            )

    def set_problem(self, path: str, message: str) -> None:
        """Remember why a file could not be indexed, or was indexed only in part (shown by
        ``reme status``, after the path: the message itself does not repeat it)."""
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO problems(path, message) VALUES (?, ?)",
                (path, problem_message(path, message)),
            )

    def begin_pass(self, paths: Iterable[str], *, rebuild: bool = False) -> None:
        """Record, before any projection changes, which paths a pass is about to change.

        The projections live in separate files and are made durable one after another; a process
        killed in between leaves them disagreeing about these paths. ``end_pass`` forgets them
        once every projection has persisted; whatever ``unsettled()`` still lists at the next
        scan was interrupted, and is applied again to every projection.
        """
        rows = [(path,) for path in dict.fromkeys(paths)]
        with self._lock, self._tx():
            self._db.executemany("INSERT OR IGNORE INTO unsettled(path) VALUES (?)", rows)
            if rebuild:
                self._db.execute(
                    "INSERT OR REPLACE INTO meta(key, value) VALUES (?, '1')", (_REBUILDING,)
                )

    def end_pass(self, paths: Iterable[str], *, rebuild: bool = False) -> None:
        """Every projection has persisted the changes to ``paths`` (all paths after a rebuild)."""
        with self._lock:
            with self._tx():
                if rebuild:
                    self._db.execute("DELETE FROM unsettled")
                    self._db.execute("DELETE FROM meta WHERE key = ?", (_REBUILDING,))
                else:
                    self._db.executemany(
                        "DELETE FROM unsettled WHERE path = ?",
                        [(p,) for p in dict.fromkeys(paths)],
                    )
            if rebuild:
                # After the rebuild that turns a schema-2 catalog's stored texts into spans the
                # file would otherwise keep its size.
                compact(self._db)

    def unsettled(self) -> tuple[set[str], bool]:
        """Paths a pass began but never finished, and whether that pass was a rebuild."""
        with self._read() as db:
            paths = {row[0] for row in db.execute("SELECT path FROM unsettled")}
            rebuild = db.execute("SELECT 1 FROM meta WHERE key = ?", (_REBUILDING,)).fetchone()
        return paths, rebuild is not None

    def clear(self) -> None:
        with self._lock:
            with self._tx():
                for table in ("chunks", "notes", "problems"):
                    self._db.execute(f"DELETE FROM {table}")
            self.generation += 1
            self._changes.clear()
            self._changes_floor = self.generation  # every path changed: nothing incremental

    def changed_since(self, generation: int) -> set[str] | None:
        """Paths put or removed after ``generation``; None when that is no longer known (too
        long ago, or the catalog was cleared since), so a cached answer must be recomputed."""
        with self._lock:
            if not self._changes_floor <= generation <= self.generation:
                return None
            return {path for changed, path in self._changes if changed > generation}

    def _changed(self, path: str) -> None:
        # Bumped after the commit: whoever sees the new generation also sees the new rows.
        self.generation += 1
        if len(self._changes) == self._changes.maxlen:
            self._changes_floor = self._changes[0][0]  # about to be forgotten
        self._changes.append((self.generation, path))

    # -- reads -------------------------------------------------------------------------------

    def hashes(self, paths: Iterable[str] | None = None) -> dict[str, str]:
        """Every indexed path's content hash (of ``paths`` when given)."""
        with self._read() as db:
            return dict(_rows_of_paths(db, "SELECT path, content_hash FROM notes", paths))

    def file_states(self) -> dict[str, FileState]:
        """Every indexed path's content hash and the stat recorded with it."""
        with self._read() as db:
            rows = db.execute(
                "SELECT path, content_hash, size, mtime_ns, ctime_ns, inode FROM notes"
            ).fetchall()
        return {
            path: FileState(
                digest,
                FileStat(size, mtime, ctime, inode) if inode is not None else None,
            )
            for path, digest, size, mtime, ctime, inode in rows
        }

    def file_stamps(self) -> dict[str, FileStamp]:
        """Every indexed path with the stat recorded beside its hash, as the scan compares it.

        Plain tuples and no hashes: at 10k notes one object per row, or the 64-character hash of
        every file, cost a no-op pass more than the query. The scan asks ``hashes(paths)`` for
        the few files whose stat changed.
        """
        with self._read() as db:
            cursor = db.execute("SELECT path, size, mtime_ns, ctime_ns, inode FROM notes")
            return {row[0]: row[1:] for row in cursor}

    def note(self, path: str) -> NoteSummary | None:
        with self._read() as db:
            row = db.execute(
                f"SELECT {_NOTE_COLUMNS} FROM notes WHERE path = ?", (path,)
            ).fetchone()
        return _note(row) if row else None

    def notes(self, paths: Iterable[str]) -> dict[str, NoteSummary]:
        with self._read() as db:
            rows = _rows_of_paths(db, f"SELECT {_NOTE_COLUMNS} FROM notes", paths)
        return {row[0]: _note(row) for row in rows}

    def chunks(self, ids: Sequence[str]) -> dict[str, Chunk]:
        """The chunks ``ids`` whose text their note still holds."""
        found: dict[str, Chunk] = {}
        for row, text in self._resolved(ids):
            found[chunk_id(row.path, row.ordinal)] = Chunk(
                path=row.path,
                ordinal=row.ordinal,
                start_line=row.start_line,
                end_line=row.end_line,
                heading=row.heading,
                text=text,
            )
        return found

    def hit_rows(self, ids: Sequence[str]) -> dict[str, HitRow]:
        """The chunks ``ids`` with their notes' names, in one query (a search's hits). A chunk
        whose note no longer holds its text (edited since it was indexed, or gone) is left out."""
        found: dict[str, HitRow] = {}
        resolver = spans.Resolver(self._read_note)
        for *chunk, name in self._rows_of(ids, with_name=True):
            row = _ChunkRow.of(tuple(chunk))
            text = resolver.text(row.path, row.heading, row.digest, row.span, row.text)
            if text is not None:
                found[chunk_id(row.path, row.ordinal)] = HitRow(
                    row.path, row.start_line, row.end_line, row.heading, text, name
                )
        return found

    def labels(self, paths: Iterable[str]) -> dict[str, NoteLabel]:
        """Name and description of each indexed note among ``paths``."""
        with self._read() as db:
            rows = _rows_of_paths(db, "SELECT path, name, description FROM notes", paths)
        return {path: NoteLabel(name, description) for path, name, description in rows}

    def chunk_texts(self, ids: Sequence[str]) -> dict[str, str]:
        """Chunk id -> text, for the ids the catalog holds (a keyword index's text source)."""
        return {chunk_id(row.path, row.ordinal): text for row, text in self._resolved(ids)}

    def chunk_rows(self, paths: Iterable[str] | None = None) -> list[tuple[str, str, str]]:
        """``(chunk_id, path, text)`` of every chunk, or of the chunks of ``paths``, in note
        order; chunks whose note no longer holds their text are left out."""
        resolver = spans.Resolver(self._read_note)
        return [
            (chunk_id(row.path, row.ordinal), row.path, text)
            for row in self._chunk_rows(paths)
            if (text := resolver.text(row.path, row.heading, row.digest, row.span, row.text))
            is not None
        ]

    def chunk_hashes(self, paths: Iterable[str] | None = None) -> list[tuple[str, str, str]]:
        """``(chunk_id, path, SHA-256 hex of its text)`` of every chunk, or of ``paths``'s:
        what changed, without reading a note (nor parsing spans: the vector pass asks this of
        every chunk, 57k at 10k notes, on every ``reme index``)."""
        sql = "SELECT path, ordinal, digest FROM chunks"
        with self._read() as db:
            rows = _rows_of_paths(db, sql, paths, order="ORDER BY path, ordinal")
        return [(chunk_id(path, ordinal), path, digest.hex()) for path, ordinal, digest in rows]

    def _chunk_rows(self, paths: Iterable[str] | None) -> list[_ChunkRow]:
        sql = f"SELECT {_CHUNK_COLUMNS} FROM chunks"
        with self._read() as db:
            rows = _rows_of_paths(db, sql, paths, order="ORDER BY path, ordinal")
        return [_ChunkRow.of(row) for row in rows]

    def _resolved(self, ids: Sequence[str]) -> list[tuple[_ChunkRow, str]]:
        """The rows of ``ids`` the catalog holds, with their texts (those still readable)."""
        resolver = spans.Resolver(self._read_note)
        out: list[tuple[_ChunkRow, str]] = []
        for row in map(_ChunkRow.of, self._rows_of(ids)):
            text = resolver.text(row.path, row.heading, row.digest, row.span, row.text)
            if text is not None:
                out.append((row, text))
        return out

    def _rows_of(self, ids: Sequence[str], *, with_name: bool = False) -> list[tuple]:
        """The stored rows of the chunks ``ids`` (``_CHUNK_COLUMNS``, then the note's name when
        ``with_name``): one primary-key lookup per id."""
        keys = [(path, int(ordinal)) for path, _, ordinal in (cid.rpartition("#") for cid in ids)
                if ordinal.isdigit()]  # fmt: skip
        columns = ", ".join(f"c.{c}" for c in _CHUNK_COLUMNS.split(", "))
        name = ", n.name" if with_name else ""
        join = " JOIN notes n ON n.path = c.path" if with_name else ""
        rows: list[tuple] = []
        with self._read() as db:
            for start in range(0, len(keys), 400):  # two parameters each: under SQLite's 999
                batch = keys[start : start + 400]
                values = ",".join(["(?, ?)"] * len(batch))
                rows += db.execute(
                    f"WITH wanted(path, ordinal) AS (VALUES {values}) SELECT {columns}{name}"
                    " FROM wanted w JOIN chunks c ON c.path = w.path AND c.ordinal = w.ordinal"
                    f"{join}",
                    [value for key in batch for value in key],
                ).fetchall()
        return rows

    def chunk_ids(
        self,
        *,
        statuses: Sequence[str] | None = None,
        since: dt.date | None = None,
        until: dt.date | None = None,
        path_patterns: Sequence[str] = (),
        paths: set[str] | None = None,
    ) -> set[str]:
        """Ids of chunks whose note passes every filter given. A note without a date fails date filters."""
        by_path = self.chunk_ids_by_path(
            statuses=statuses, since=since, until=until, path_patterns=path_patterns, paths=paths
        )
        return set().union(*by_path.values())

    def chunk_ids_by_path(
        self,
        *,
        statuses: Sequence[str] | None = None,
        since: dt.date | None = None,
        until: dt.date | None = None,
        path_patterns: Sequence[str] = (),
        paths: set[str] | None = None,
    ) -> dict[str, list[str]]:
        """``chunk_ids`` grouped by note path (a covering index answers it: no chunk is read)."""
        clauses: list[str] = []
        params: list[object] = []
        if statuses is not None:
            clauses.append(f"n.status IN ({','.join('?' * len(statuses))})")
            params.extend(statuses)
        if since is not None:
            clauses.append("n.date >= ?")
            params.append(since.isoformat())
        if until is not None:
            clauses.append("n.date <= ?")
            params.append(until.isoformat())
        where = " AND ".join(clauses) or "1"
        sql = (
            "SELECT c.path || '#' || c.ordinal, c.path FROM chunks c JOIN notes n"
            f" ON n.path = c.path WHERE {where}"
        )
        with self._read() as db:
            rows = _rows_of_paths(
                db,
                sql,
                None if paths is None else sorted(paths),
                column="c.path",
                joiner="AND",
                params=params,
            )
        by_path: dict[str, list[str]] = {}
        for cid, path in rows:
            by_path.setdefault(path, []).append(cid)
        if path_patterns:
            by_path = {p: ids for p, ids in by_path.items() if _matches_any(p, path_patterns)}
        return by_path

    def counts(self) -> dict[str, int]:
        with self._read() as db:
            notes = db.execute("SELECT COUNT(*) FROM notes").fetchone()[0]
            chunks = db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
            problems = db.execute("SELECT COUNT(*) FROM problems").fetchone()[0]
        return {"files": notes, "chunks": chunks, "problem_count": problems}

    def paths(self) -> set[str]:
        """Every indexed path."""
        with self._read() as db:
            return {row[0] for row in db.execute("SELECT path FROM notes")}

    def all_chunk_ids(self) -> set[str]:
        """Every chunk id, unfiltered (cheaper than ``chunk_ids()``: no join)."""
        with self._read() as db:
            return {row[0] for row in db.execute("SELECT path || '#' || ordinal FROM chunks")}

    def paths_with_tags(self) -> set[str]:
        """Paths whose note lists any tag (no tag list is parsed)."""
        with self._read() as db:
            return {row[0] for row in db.execute("SELECT path FROM notes WHERE tags != '[]'")}

    def tags_by_path(self, paths: Iterable[str] | None = None) -> dict[str, list[str]]:
        """The tags of every note that has any (of ``paths`` when given)."""
        sql = "SELECT path, tags FROM notes WHERE tags != '[]'"
        with self._read() as db:
            rows = _rows_of_paths(db, sql, paths, joiner="AND")
        # One JSON array of every note's list: a single parse, not one per note.
        lists = json.loads("[" + ",".join(tags for _, tags in rows) + "]")
        return {path: tags for (path, _), tags in zip(rows, lists, strict=True)}

    def problems(self) -> dict[str, str]:
        """Path -> message; messages stored by older versions lose their path prefix here."""
        with self._read() as db:
            rows = db.execute("SELECT path, message FROM problems ORDER BY path").fetchall()
        return {path: problem_message(path, message) for path, message in rows}

    def _tx(self) -> _Transaction:
        return _Transaction(self._db)

    def _read(self) -> AbstractContextManager[sqlite3.Connection]:
        """A read connection for this block, from the pool (opened when none is free)."""
        return self._pool.read()


class _Transaction:
    def __init__(self, db: sqlite3.Connection):
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN")

    def __exit__(self, exc_type: object, *_: object) -> None:
        self._db.execute("ROLLBACK" if exc_type else "COMMIT")


def problem_message(path: str, message: str) -> str:
    """``message`` without a leading ``"<path>: "``: errors name their file, but every place that
    shows a problem already prints the path in front of it."""
    return message.removeprefix(f"{path}: ")


def _matches_any(path: str, patterns: Sequence[str]) -> bool:
    """A path matches a pattern when it equals it, lies under it as a folder, or matches it as a glob.

    Globs follow the workspace rules (``*`` stays within one folder, ``**`` crosses folders), the
    same as ``index.exclude``, so ``daily/*.md`` means the day pages, not every note under daily/.
    """
    if not patterns:
        return True
    return path_matches(path, patterns)


def _stat_values(stat: FileStat | None) -> tuple[int | None, int | None, int | None]:
    return (None, None, None) if stat is None else (stat.mtime_ns, stat.ctime_ns, stat.inode)


def _note(row: tuple) -> NoteSummary:
    path, content_hash, size, name, description, status, date, tags, frontmatter = row
    return NoteSummary(
        path=path,
        content_hash=content_hash,
        size=size,
        name=name,
        description=description,
        status=status,
        date=dt.date.fromisoformat(date) if date else None,
        tags=json.loads(tags),
        frontmatter=json.loads(frontmatter),
    )


def _migrate_chunks(db: sqlite3.Connection, db_path: Path) -> None:
    """Move a schema-2 chunks table (an id column, texts always stored) to the current one.

    Texts are kept whole, so nothing has to be read and every search answers as before; each
    note's chunks become spans when it is indexed again (``reme reindex`` does them all).
    """
    columns = {row[1] for row in db.execute("PRAGMA table_info(chunks)")}
    if "id" not in columns:
        return
    log.info(
        "catalog %s: chunks moved to schema %d (keyed by path and ordinal; texts are read from "
        "the notes once each is indexed again, `reme reindex` does all of them)",
        db_path,
        SCHEMA_VERSION,
    )
    db.execute("BEGIN")
    try:
        db.execute("ALTER TABLE chunks RENAME TO chunks_v2")
        db.execute("DROP INDEX IF EXISTS chunks_path_id")
        db.execute("DROP INDEX IF EXISTS chunks_path")
        db.execute(_CHUNKS_SCHEMA)
        rows = db.execute(
            "SELECT path, ordinal, start_line, end_line, heading, text FROM chunks_v2"
        ).fetchall()
        db.executemany(
            f"INSERT OR REPLACE INTO chunks({_CHUNK_COLUMNS})"
            " VALUES (?, ?, ?, ?, ?, ?, NULL, NULL, 0, ?)",
            [(p, o, s, e, h, spans.digest(t), t) for p, o, s, e, h, t in rows],
        )
        db.execute("DROP TABLE chunks_v2")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
