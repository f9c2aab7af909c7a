"""Moving a format-2 index's rows into the current rows database, once, on first load."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

from reme_plugins.sqlite_util import LockedDb

log = logging.getLogger(__name__)

_OLD_ROWS_DB = "chunks.sqlite3"  # format 2: (id, path, hex hash, text); migrated on first load


def _migrate_old_rows(directory: Path, db: LockedDb) -> None:
    """Move the rows of a format-2 ``chunks.sqlite3`` (hex hashes, a path column) into
    ``rows.sqlite3`` once, as delta: the next merge rebuilds main from their texts."""
    old = directory / _OLD_ROWS_DB
    if not old.exists():
        return
    try:
        with sqlite3.connect(old) as conn:
            rows = conn.execute("SELECT id, hash, text FROM chunks").fetchall()
    except sqlite3.DatabaseError as exc:
        log.warning("bm25s: cannot read %s (%s); its chunks are indexed again", old, exc)
        rows = []
    with db.transaction() as conn:
        conn.executemany(
            "INSERT OR REPLACE INTO chunks (id, hash, main, text) VALUES (?, ?, 0, ?)",
            [(cid, _hex_hash(h), text) for cid, h, text in rows],
        )
    for suffix in ("", "-wal", "-shm"):
        Path(f"{old}{suffix}").unlink(missing_ok=True)


def _hex_hash(value: object) -> int:
    try:
        return int(str(value)[:15], 16)
    except ValueError:
        return -1  # no hash at all: never equal to a chunk's, so the chunk is indexed again
