"""Read-only SQLite connections to one WAL-mode file, one per concurrent reader, reused.

WAL readers never block each other or the writer, and each read sees only committed transactions,
so components keep one writer connection for changes and borrow a connection from here per read.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class ReadPool:
    """Query-only connections to ``path``, opened when none is free and kept for the next read."""

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()
        self._idle: list[sqlite3.Connection] = []  # read connections not in use
        self._all: list[sqlite3.Connection] = []  # every read connection, to close them
        self._closed = False

    @contextmanager
    def read(self, *, snapshot: bool = False) -> Iterator[sqlite3.Connection]:
        """A connection for this block; with ``snapshot``, every query in it sees one state."""
        with self._lock:
            if self._closed:
                raise sqlite3.ProgrammingError("Cannot operate on a closed database.")
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            conn.execute("PRAGMA query_only=ON")
            conn.execute("PRAGMA busy_timeout=5000")
            with self._lock:
                self._all.append(conn)
        try:
            if not snapshot:
                yield conn
            else:
                # A deferred read transaction: WAL pins its snapshot at the first query.
                conn.execute("BEGIN")
                try:
                    yield conn
                finally:
                    conn.execute("COMMIT")
        finally:
            with self._lock:
                if not self._closed:
                    self._idle.append(conn)

    def close(self) -> None:
        """Close every connection; later reads are refused."""
        with self._lock:
            self._closed = True
            for conn in self._all:
                conn.close()
            self._all.clear()
            self._idle.clear()


def compact(conn: sqlite3.Connection, free_share: float = 0.25) -> bool:
    """VACUUM when more than ``free_share`` of the file is free pages (after a bulk delete or a
    rebuild that shrank the rows); True when it did. Call outside a transaction."""
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    free = conn.execute("PRAGMA freelist_count").fetchone()[0]
    if not pages or free <= free_share * pages:
        return False
    conn.execute("VACUUM")
    return True
