"""SQLite catalog of indexed files and their chunks (WAL mode, under ``.reme/``).

The catalog is the indexer's memory of what it has seen: a file whose content hash matches its row
is skipped. It also answers filter queries (status, dates, paths) for the search arms.

Writes go through one connection, one at a time. Reads borrow a connection of their own from a
small pool, so concurrent searches query in parallel (WAL readers never block each other or the
writer) and each read sees only committed transactions: a ``put`` whole or not at all.

This module holds the writes, the intent log and the change log, and the file stats the scan
compares; the reads are in ``catalog_queries``, the tables and migrations in ``catalog_schema``.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from reme_core.index import spans
from reme_core.index.catalog_queries import CatalogQueries, HitRow, NoteLabel, problem_message
from reme_core.index.catalog_schema import (
    ARM_COLUMNS,
    CHUNK_COLUMNS,
    NOTE_COLUMNS,
    REBUILDING,
    SCHEMA_VERSION,
    STAT_COLUMNS,
    Transaction,
    create_tables,
    rows_of_paths,
)
from reme_core.index.spans import NoteReader
from reme_core.index.sqlite_pool import ReadPool, compact
from reme_core.schema import Chunk, NoteSummary

# Defined in catalog_queries and catalog_schema; importing them from here keeps working.
__all__ = [
    "CHANGE_LOG",
    "RACY_NS",
    "SCHEMA_VERSION",
    "Catalog",
    "FileStamp",
    "FileStat",
    "FileState",
    "HitRow",
    "NoteLabel",
    "problem_message",
    "stamp_of",
]

log = logging.getLogger(__name__)

CHANGE_LOG = 1024
"""Changes remembered for ``changed_since``: callers more changes behind recompute from scratch."""

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


class Catalog(CatalogQueries):
    """Rows per indexed file and per chunk. Safe to call from the API and the watcher thread."""

    def __init__(self, db_path: Path):
        db_path.parent.mkdir(parents=True, exist_ok=True)
        self.db_path = db_path
        self._lock = threading.RLock()
        self._db = sqlite3.connect(db_path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA foreign_keys=ON")
        if create_tables(self._db):
            log.info(
                "catalog %s: chunks moved to schema %d (keyed by path and ordinal; texts are read"
                " from the notes once each is indexed again, `reme reindex` does all of them)",
                db_path,
                SCHEMA_VERSION,
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
            f"INSERT OR REPLACE INTO notes({NOTE_COLUMNS}, {', '.join(STAT_COLUMNS)})"
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
            f"INSERT INTO chunks({CHUNK_COLUMNS}, {', '.join(ARM_COLUMNS)})"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                    c.keyword_text,
                    c.vector_text,
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
                    "INSERT OR REPLACE INTO meta(key, value) VALUES (?, '1')", (REBUILDING,)
                )

    def end_pass(self, paths: Iterable[str], *, rebuild: bool = False) -> None:
        """Every projection has persisted the changes to ``paths`` (all paths after a rebuild)."""
        with self._lock:
            with self._tx():
                if rebuild:
                    self._db.execute("DELETE FROM unsettled")
                    self._db.execute("DELETE FROM meta WHERE key = ?", (REBUILDING,))
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
            rebuild = db.execute("SELECT 1 FROM meta WHERE key = ?", (REBUILDING,)).fetchone()
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

    # -- reads the scan makes (the others: ``CatalogQueries``) --------------------------------

    def hashes(self, paths: Iterable[str] | None = None) -> dict[str, str]:
        """Every indexed path's content hash (of ``paths`` when given)."""
        with self._read() as db:
            return dict(rows_of_paths(db, "SELECT path, content_hash FROM notes", paths))

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

    def _tx(self) -> Transaction:
        return Transaction(self._db)


def _stat_values(stat: FileStat | None) -> tuple[int | None, int | None, int | None]:
    return (None, None, None) if stat is None else (stat.mtime_ns, stat.ctime_ns, stat.inode)
