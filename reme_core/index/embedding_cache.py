"""Embeddings cached by (model, chunk content hash), and what the vector store holds.

An unchanged chunk is never embedded twice, across restarts and across paths (a moved note reuses
its vectors). The ``stored`` table records which content each chunk id has in the vector store, so
after a crash or a model change reconciliation knows exactly what to (re-)upsert.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    model_id TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model_id, content_hash)
);
CREATE TABLE IF NOT EXISTS stored (
    chunk_id TEXT PRIMARY KEY,
    content_hash TEXT NOT NULL,
    model_id TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS refused (
    chunk_id TEXT PRIMARY KEY,
    content_hash TEXT NOT NULL,
    model_id TEXT NOT NULL,
    reason TEXT NOT NULL
);
"""


class EmbeddingCache:
    """SQLite under ``.reme/embeddings.sqlite3``; safe to share between threads."""

    def __init__(self, db_path: Path):
        self.db_path = db_path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(db_path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def get(self, model_id: str, hashes: Iterable[str]) -> dict[str, np.ndarray]:
        wanted = list(dict.fromkeys(hashes))
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for start in range(0, len(wanted), 500):
                batch = wanted[start : start + 500]
                marks = ",".join("?" * len(batch))
                rows = self._db.execute(
                    f"SELECT content_hash, vector FROM vectors WHERE model_id = ?"
                    f" AND content_hash IN ({marks})",
                    [model_id, *batch],
                )
                for content_hash, blob in rows:
                    found[content_hash] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put(self, model_id: str, vectors: Mapping[str, np.ndarray]) -> None:
        rows = [
            (model_id, h, np.asarray(v, dtype=np.float32).tobytes()) for h, v in vectors.items()
        ]
        with self._lock:
            self._db.execute("BEGIN")
            self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", rows)
            self._db.execute("COMMIT")

    # -- what the store holds ----------------------------------------------------------------

    def stored(self, model_id: str) -> dict[str, str]:
        """chunk id -> content hash held in the store for this model."""
        with self._lock:
            rows = self._db.execute(
                "SELECT chunk_id, content_hash FROM stored WHERE model_id = ?", (model_id,)
            )
            return dict(rows)

    def mark_stored(self, model_id: str, entries: Mapping[str, str]) -> None:
        with self._lock:
            self._db.execute("BEGIN")
            self._db.executemany(
                "INSERT OR REPLACE INTO stored VALUES (?, ?, ?)",
                [(cid, h, model_id) for cid, h in entries.items()],
            )
            self._db.execute("COMMIT")

    def unmark(self, chunk_ids: Iterable[str]) -> None:
        ids = list(chunk_ids)
        with self._lock:
            self._db.execute("BEGIN")
            self._db.executemany("DELETE FROM stored WHERE chunk_id = ?", [(i,) for i in ids])
            self._db.execute("COMMIT")

    def unmark_paths(self, paths: Iterable[str]) -> None:
        """Forget every chunk of these files (ids are ``path#n``: a range per path, no scan).

        A path that itself contains ``#`` can also unmark a sibling (``c`` and ``c#.md``); that only
        costs the sibling a redundant re-store on the next reconcile, never a lost vector.
        """
        ranges = [(f"{path}#", f"{path}$") for path in paths]  # "$" sorts right after "#"
        with self._lock:
            self._db.execute("BEGIN")
            self._db.executemany("DELETE FROM stored WHERE chunk_id >= ? AND chunk_id < ?", ranges)
            self._db.execute("COMMIT")

    def forget_other_models(self, model_id: str) -> None:
        """The store was reopened for another vector space: nothing of the old one is held."""
        with self._lock:
            self._db.execute("DELETE FROM stored WHERE model_id != ?", (model_id,))
            self._db.execute("DELETE FROM refused WHERE model_id != ?", (model_id,))

    # -- what the model or the store refused -------------------------------------------------

    def refused(self, model_id: str) -> dict[str, tuple[str, str]]:
        """chunk id -> (content hash, reason) of chunks the model or the store refused alone:
        not retried until their content changes, and not counted as missing."""
        with self._lock:
            rows = self._db.execute(
                "SELECT chunk_id, content_hash, reason FROM refused WHERE model_id = ?",
                (model_id,),
            )
            return {cid: (digest, reason) for cid, digest, reason in rows}

    def set_refused(
        self, model_id: str, paths: Iterable[str], entries: Mapping[str, tuple[str, str]]
    ) -> None:
        """Replace the refusals of the chunks of ``paths`` with ``entries`` (id -> hash, reason)."""
        ranges = [(f"{path}#", f"{path}$") for path in paths]  # as in ``unmark_paths``
        with self._lock:
            self._db.execute("BEGIN")
            self._db.executemany("DELETE FROM refused WHERE chunk_id >= ? AND chunk_id < ?", ranges)
            self._db.executemany(
                "INSERT OR REPLACE INTO refused VALUES (?, ?, ?, ?)",
                [(cid, h, model_id, why) for cid, (h, why) in entries.items()],
            )
            self._db.execute("COMMIT")

    def clear_refused(self) -> None:
        with self._lock:
            self._db.execute("DELETE FROM refused")
