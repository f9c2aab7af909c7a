"""What a purge (``reme forget --purge``) does to the state under ``.reme/`` beyond the indexer's
own removal of a note: its cached embeddings dropped, and every SQLite file rewritten so deleted
rows leave no bytes behind; and the byte-level check that nothing under a folder still holds a
string.

SQLite keeps a deleted row's bytes in free pages (and in its write-ahead log) until they are
reused, so a ``DELETE`` alone leaves the text readable to ``grep``. ``VACUUM`` writes the database
anew from its live rows, and a ``TRUNCATE`` checkpoint empties the log; both run on connections
of their own, which SQLite allows beside the components' connections (WAL mode, none of them
holding a transaction between calls).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path

SQLITE_MAGIC = b"SQLite format 3\x00"
BUSY_TIMEOUT_MS = 10_000
SCAN_CHUNK = 1 << 20


def sqlite_files(state_dir: Path) -> list[Path]:
    """Every SQLite database under ``state_dir`` (found by its header, whatever its name)."""
    found = []
    for path in sorted(state_dir.rglob("*")):
        if not path.is_file() or path.is_symlink() or "history.git" in path.parts:
            continue
        try:
            with path.open("rb") as handle:
                if handle.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC:
                    found.append(path)
        except OSError:
            continue
    return found


def drop_cached_embeddings(db_path: Path, digests: Iterable[str]) -> int:
    """Delete the cached vectors of these chunk digests (every model); returns how many."""
    wanted = sorted(set(digests))
    if not wanted or not db_path.is_file():
        return 0
    removed = 0
    with contextlib.closing(sqlite3.connect(db_path, timeout=BUSY_TIMEOUT_MS / 1000)) as db:
        for start in range(0, len(wanted), 400):
            batch = wanted[start : start + 400]
            marks = ",".join("?" * len(batch))
            removed += db.execute(
                f"DELETE FROM vectors WHERE content_hash IN ({marks})", batch
            ).rowcount
        db.commit()
    return removed


def rewrite_sqlite(paths: Sequence[Path]) -> list[str]:
    """VACUUM each database and empty its log; returns the names rewritten. One that is locked
    for longer than the busy timeout raises (sqlite3.OperationalError): the caller reports it."""
    done = []
    for path in paths:
        with contextlib.closing(sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000)) as db:
            db.isolation_level = None  # VACUUM cannot run inside a transaction
            db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            db.execute("VACUUM")
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        done.append(path.name)
    return done


def files_holding(folder: Path, needles: Sequence[bytes], skip: Sequence[Path] = ()) -> list[str]:
    """The files under ``folder`` (relative names) whose bytes contain any of ``needles``; the
    folders in ``skip`` are left out (a git store is compressed: ask git instead)."""
    return sorted(needles_held(folder, needles, skip))


def needles_held(
    folder: Path, needles: Sequence[bytes], skip: Sequence[Path] = ()
) -> dict[str, set[bytes]]:
    """Each file under ``folder`` (relative name) holding any of ``needles``: which it holds."""
    needles = [n for n in dict.fromkeys(needles) if n]
    if not needles:
        return {}
    overlap = max(len(n) for n in needles) - 1
    hits: dict[str, set[bytes]] = {}
    for path in sorted(folder.rglob("*")):
        if not path.is_file() or path.is_symlink():
            continue
        if any(s == path or s in path.parents for s in skip):
            continue
        found = _held(path, needles, overlap)
        if found:
            hits[path.relative_to(folder).as_posix()] = found
    return hits


def _held(path: Path, needles: Sequence[bytes], overlap: int) -> set[bytes]:
    found: set[bytes] = set()
    try:
        with path.open("rb") as handle:
            tail = b""
            while block := handle.read(SCAN_CHUNK):
                window = tail + block
                found.update(n for n in needles if n not in found and n in window)
                if len(found) == len(needles):
                    break
                tail = window[-overlap:] if overlap else b""
    except OSError:
        return found
    return found
