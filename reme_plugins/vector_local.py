"""The reference vector store: exact cosine search over every vector, filters applied exactly.

Vectors live in ``<state_dir>/vectors.sqlite3`` (one row per chunk: path, status, date, tags as
JSON, the vector as float32 bytes); the vector space's ``model_id`` and ``dim`` sit in a meta
table. Search runs over an in-memory matrix loaded on first use and kept in step with every
write, so it costs one matrix-vector product. Scalar fields are interned to small integer codes,
so a filter is evaluated once per distinct value (path, tag set...) rather than once per chunk.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from reme_core.api import (
    ComponentContext,
    ComponentSettings,
    FileStore,
    SearchFilters,
    VectorRecord,
    hookimpl,
    path_matches,
)
from reme_plugins.sqlite_util import LockedDb, SqliteFileSettings, open_db, state_file
from reme_plugins.vector_filters import (
    VectorStoreError,
    date_ok,
    expand_tags,
    query_tags,
    tags_ok,
    unit_rows,
)

SCHEMA_VERSION = 1

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS vectors (
    chunk_id TEXT PRIMARY KEY,
    path TEXT NOT NULL,
    status TEXT NOT NULL,
    date TEXT,
    tags TEXT NOT NULL DEFAULT '[]',
    vector BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS vectors_by_path ON vectors (path);
"""


class _Interned:
    """Distinct values and their codes, so a predicate runs once per distinct value."""

    def __init__(self) -> None:
        self.values: list[Any] = []
        self._codes: dict[Any, int] = {}

    def code(self, value: Any) -> int:
        found = self._codes.get(value)
        if found is None:
            found = self._codes[value] = len(self.values)
            self.values.append(value)
        return found

    def table(self, predicate: Callable[[Any], bool]) -> np.ndarray:
        return np.fromiter((predicate(v) for v in self.values), dtype=bool, count=len(self.values))


class _Matrix:
    """Rows of unit vectors plus interned scalar codes; deleted rows are reused."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.vecs = np.zeros((0, dim), dtype=np.float32)
        self.live = np.zeros(0, dtype=bool)
        self.codes = np.zeros((0, 4), dtype=np.int32)  # path, status, date, tags
        self.ids: list[str | None] = []
        self.row: dict[str, int] = {}
        self.free: list[int] = []
        self.fields = [_Interned(), _Interned(), _Interned(), _Interned()]
        self.by_path: dict[str, set[str]] = {}

    def _grow(self, need: int) -> None:
        cap = max(16, len(self.vecs) * 2, need)
        self.vecs = np.resize(self.vecs, (cap, self.dim))
        self.live = np.concatenate([self.live, np.zeros(cap - len(self.live), dtype=bool)])
        self.codes = np.resize(self.codes, (cap, 4))

    def put(self, rec: VectorRecord, vector: np.ndarray, tags: tuple[str, ...]) -> None:
        i = self.row.get(rec.chunk_id)
        if i is None:
            if self.free:
                i = self.free.pop()
            else:
                i = len(self.ids)
                self.ids.append(None)
                if i >= len(self.vecs):
                    self._grow(i + 1)
            self.row[rec.chunk_id] = i
            self.ids[i] = rec.chunk_id
        else:
            old_path = self.fields[0].values[self.codes[i, 0]]
            self.by_path.get(old_path, set()).discard(rec.chunk_id)
        self.vecs[i] = vector
        self.live[i] = True
        values = (rec.path, rec.status, rec.date, tuple(sorted(tags)))
        self.codes[i] = [f.code(v) for f, v in zip(self.fields, values, strict=True)]
        self.by_path.setdefault(rec.path, set()).add(rec.chunk_id)

    def drop_path(self, path: str) -> None:
        for chunk_id in self.by_path.pop(path, set()):
            i = self.row.pop(chunk_id)
            self.ids[i] = None
            self.live[i] = False
            self.free.append(i)

    def mask(self, filters: SearchFilters | None) -> np.ndarray:
        n = len(self.ids)
        ok = self.live[:n].copy()
        if filters is None:
            return ok
        paths, statuses, dates, tags = self.fields
        codes = self.codes[:n]
        wanted_statuses = set(filters.statuses)
        ok &= statuses.table(lambda s: s in wanted_statuses)[codes[:, 1]]
        if filters.since is not None or filters.until is not None:
            ok &= dates.table(lambda d: date_ok(d, filters))[codes[:, 2]]
        wanted = query_tags(filters)
        if wanted:
            ok &= tags.table(lambda t: tags_ok(t, wanted, filters.tag_mode))[codes[:, 3]]
        if filters.paths:
            ok &= paths.table(lambda p: path_matches(p, filters.paths))[codes[:, 0]]
        return ok


class LocalFileStore(FileStore):
    """Exact search in numpy over vectors kept in ``<state_dir>/vectors.sqlite3``; thread-safe."""

    name: ClassVar[str] = "local"

    class Settings(SqliteFileSettings):
        filename: str = "vectors.sqlite3"

    settings: Settings

    def __init__(
        self, settings: ComponentSettings | None = None, context: ComponentContext | None = None
    ):
        super().__init__(settings, context)
        self._path = state_file(context, self.settings.filename, "the local vector store")
        self._db = LockedDb(lambda: open_db(self._path, SCHEMA, SCHEMA_VERSION))
        self._lock = threading.RLock()
        self._model_id: str | None = None
        self._dim = 0
        self._matrix: _Matrix | None = None

    def state_files(self) -> list[Path]:
        return [self._path]

    def open(self, model_id: str, dim: int) -> None:
        """Use the vector space ``model_id``/``dim``; vectors of another space are dropped."""
        if not model_id or int(dim) <= 0:
            raise VectorStoreError(f"open() needs a model id and a positive dim, got {dim!r}")
        with self._lock, self._db.transaction() as conn:
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
            if meta != {"model_id": model_id, "dim": str(int(dim))}:
                conn.execute("DELETE FROM vectors")
                conn.execute("DELETE FROM meta")
                conn.executemany(
                    "INSERT INTO meta (key, value) VALUES (?, ?)",
                    [("model_id", model_id), ("dim", str(int(dim)))],
                )
            self._model_id, self._dim, self._matrix = model_id, int(dim), None

    def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Insert or replace by ``chunk_id``; the last of duplicate ids in one call wins."""
        if not records:
            return
        self._require_open()
        latest = {r.chunk_id: r for r in records}
        recs = list(latest.values())
        vectors = unit_rows(np.stack([np.asarray(r.vector) for r in recs]), self._dim, "a vector")
        tags = [expand_tags(r.tags) for r in recs]
        rows = [
            (r.chunk_id, r.path, r.status, r.date, json.dumps(t), v.tobytes())
            for r, v, t in zip(recs, vectors, tags, strict=True)
        ]
        with self._lock:
            with self._db.transaction() as conn:
                conn.executemany(
                    "INSERT OR REPLACE INTO vectors (chunk_id, path, status, date, tags, vector)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    rows,
                )
            if self._matrix is not None:
                for r, v, t in zip(recs, vectors, tags, strict=True):
                    self._matrix.put(r, v, t)

    def delete_paths(self, paths: Sequence[str]) -> None:
        """Remove every record of these files."""
        if isinstance(paths, str):
            paths = [paths]
        self._require_open()
        with self._lock:
            with self._db.transaction() as conn:
                conn.executemany("DELETE FROM vectors WHERE path = ?", [(p,) for p in paths])
            if self._matrix is not None:
                for p in paths:
                    self._matrix.drop_path(p)

    def search(
        self, vector: np.ndarray, limit: int, filters: SearchFilters | None = None
    ) -> list[tuple[str, float]]:
        """Exact top ``limit`` by cosine among records passing ``filters`` (all of them)."""
        self._require_open()
        query = unit_rows(vector, self._dim, "the query vector")[0]
        if limit <= 0:
            return []
        with self._lock:
            m = self._loaded()
            n = len(m.ids)
            if n == 0:
                return []
            candidates = np.flatnonzero(m.mask(filters))
            if len(candidates) == 0:
                return []
            scores = (m.vecs[: len(m.ids)] @ query)[candidates]  # no copy of the matrix
            k = min(limit, len(candidates))
            top = np.argpartition(-scores, k - 1)[:k] if k < len(candidates) else np.arange(k)
            top = top[np.argsort(-scores[top], kind="stable")]
            return [(m.ids[candidates[i]], float(scores[i])) for i in top]  # type: ignore[misc]

    def ids(self) -> set[str]:
        """Every stored chunk id."""
        self._require_open()
        with self._db.read() as conn:
            return {row[0] for row in conn.execute("SELECT chunk_id FROM vectors")}

    def clear(self) -> None:
        """Drop every record (the vector space stays)."""
        self._require_open()
        with self._lock:
            with self._db.transaction() as conn:
                conn.execute("DELETE FROM vectors")
            self._matrix = None

    def stats(self) -> dict[str, Any]:
        """Numbers for ``reme status``."""
        with self._db.read() as conn:
            count = conn.execute("SELECT count(*) FROM vectors").fetchone()[0]
        return {"vectors": count, "model_id": self._model_id, "dim": self._dim or None}

    def close(self) -> None:
        """Close the database and drop the matrix; ``open()`` again before further use."""
        with self._lock:
            self._db.close()
            self._matrix = None
            self._model_id = None

    def _require_open(self) -> None:
        if self._model_id is None:
            raise VectorStoreError("the local vector store is not open: call open(model_id, dim)")

    def _loaded(self) -> _Matrix:
        if self._matrix is None:
            m = _Matrix(self._dim)
            with self._db.read() as conn:
                rows = conn.execute(
                    "SELECT chunk_id, path, status, date, tags, vector FROM vectors"
                ).fetchall()
            if rows:
                m._grow(len(rows))
            for chunk_id, path, status, date, tags, blob in rows:
                vec = np.frombuffer(blob, dtype=np.float32)
                if vec.shape != (self._dim,):
                    raise VectorStoreError(
                        f"vector of {chunk_id!r} has {vec.size} values, expected {self._dim}; the "
                        f"store is damaged: delete {self.settings.filename} and reindex"
                    )
                m.put(VectorRecord(chunk_id, path, vec, status, date), vec, tuple(json.loads(tags)))
            self._matrix = m
        return self._matrix


@hookimpl
def register_file_stores(register: Callable[[type[FileStore]], None]) -> None:
    """Register the exact local store as ``local``."""
    register(LocalFileStore)
