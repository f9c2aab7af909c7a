"""Open the SQLite files that hold derived state, the same way for every plugin that uses one."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import field_validator

from reme_core.api import ComponentContext, ComponentSettings, PluginError, RemeError


def open_db(path: Path, schema: str, schema_version: int) -> sqlite3.Connection:
    """Open (creating if needed) a WAL-mode database at ``path`` and apply ``schema``.

    A file written by another schema version is refused with a message, rather than misread.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    # check_same_thread=False: the watcher thread and request threads share one connection and
    # every caller serialises through a lock (see LockedDb), so SQLite's own check only hinders.
    # isolation_level=None: transactions are explicit (BEGIN ... COMMIT in LockedDb.transaction).
    conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        # NORMAL is durable enough for a projection that can be rebuilt from the notes, and avoids
        # an fsync per commit, which matters when bulk indexing commits once per note.
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA busy_timeout=5000")
        conn.execute("PRAGMA temp_store=MEMORY")
        found = conn.execute("PRAGMA user_version").fetchone()[0]
        if found not in (0, schema_version):
            raise RemeError(
                f"{path} was written by schema version {found}, this reme uses {schema_version}; "
                f"delete the file and run `reme reindex` to rebuild it from the notes"
            )
        conn.executescript(schema)
        if found != schema_version:  # opening an up-to-date file writes nothing (drift seal)
            conn.execute(f"PRAGMA user_version={int(schema_version)}")
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise RemeError(
            f"cannot open {path} as an index database ({exc}); it is derived state: delete it and "
            f"run `reme reindex` to rebuild it from the notes"
        ) from exc
    except BaseException:
        conn.close()
        raise
    return conn


class LockedDb:
    """One lazily opened connection, shared across threads and guarded by a lock."""

    def __init__(self, opener: Callable[[], sqlite3.Connection]):
        self._opener = opener
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.RLock()

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """Hold the lock and yield the connection, for queries."""
        with self._lock:
            yield self._connection()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """Hold the lock and run the block in one transaction, rolled back if it raises."""
        with self._lock:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def close(self) -> None:
        """Close the connection; the next use opens it again."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = self._opener()
        return self._conn


def state_file(context: ComponentContext | None, filename: str, owner: str) -> Path:
    """The path of ``filename`` inside the component's ``state_dir``."""
    if context is None:
        raise PluginError(f"{owner} needs a workspace context (state_dir) to keep its database in")
    return context.state_dir / filename


def check_filename(value: str) -> str:
    """Pydantic validator: a bare file name, so the database stays inside ``state_dir``."""
    if not value or value in (".", "..") or "/" in value or "\\" in value:
        raise ValueError(f"must be a plain file name inside the state folder, got {value!r}")
    return value


class SqliteFileSettings(ComponentSettings):
    """Settings of a component kept in one SQLite file under ``.reme/``; subclasses set the default."""

    filename: str
    """Database file name inside the workspace's ``.reme/`` folder."""

    @field_validator("filename")
    @classmethod
    def _plain_name(cls, value: str) -> str:
        return check_filename(value)
