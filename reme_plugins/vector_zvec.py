"""The default vector store: one zvec collection per workspace, in ``<state_dir>/zvec/<name>``.

The collection is created with an HNSW index (cosine). zvec searches the segments the index does
not cover yet by brute force, so search is exact until ``optimize()`` builds the graph, and
approximate (high recall) after. Filters are pushed down into zvec's filter grammar; where a value
cannot be written safely into it (quotes, backslashes, LIKE wildcards in a path, a glob) the
condition is widened and the results post-filtered, over-fetching until ``limit`` hits are found
or the candidates run out, so a filter is never widened in what the caller sees.

zvec allows one writer or many readers per collection across processes and fails at once on a
conflicting open: that is reported as ``StoreBusyError``. ``read_only: true`` opens as a reader.
The vector space (model id and dim) is kept in a sidecar ``<name>.meta.json``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from pydantic import Field, field_validator

from reme_core.api import (
    ComponentContext,
    ComponentSettings,
    FileStore,
    PluginError,
    RemeError,
    SearchFilters,
    StoreBusyError,
    VectorRecord,
    hookimpl,
)
from reme_plugins.sqlite_util import check_filename
from reme_plugins.vector_filters import (
    VectorStoreError,
    encode_tag,
    expand_tags,
    matches,
    quote,
    safe_literal,
    unit_rows,
    zvec_plan,
)

META_VERSION = 1
VECTOR = "v"
_FIELDS = ["path", "status", "date", "tags"]
_ROCKSDB_BOOKKEEPING = re.compile(
    r"(CURRENT|IDENTITY|LOCK|LOG(\.old\..*)?|MANIFEST-\d+|OPTIONS-\d+)"
)
"""Files the RocksDB stores inside a collection rewrite each time it opens, whatever it holds."""
_initialised = False
_init_lock = threading.Lock()


def _zvec() -> Any:
    """Import zvec on first use (registration stays cheap) and quieten its console logging."""
    global _initialised
    try:
        import zvec
    except ImportError as exc:  # pragma: no cover - zvec is a dependency of reme
        raise PluginError("the zvec vector store needs the zvec package: pip install zvec") from exc
    with _init_lock:
        if not _initialised:
            _initialised = True
            # zvec logs rejected filters and planner fallbacks at WARN/ERROR on stderr; failures
            # reach us as exceptions anyway. init() may be called once per process only.
            with contextlib.suppress(Exception):
                zvec.init(log_level=zvec.LogLevel.FATAL)
    return zvec


@contextlib.contextmanager
def _wrapped(action: str, where: Path) -> Iterator[None]:
    """Turn a zvec exception into a RemeError naming the action and the collection."""
    try:
        yield
    except RemeError:
        raise
    except Exception as exc:
        text = str(exc)
        if "can't lock" in text.lower():
            # A writer excludes readers too, so read_only only helps beside other readers.
            raise StoreBusyError(
                f"the zvec collection {where} is in use by another process ({text}); "
                "keyword search still works; stop the other reme (e.g. `reme watch`) or search "
                "through it"
            ) from exc
        raise VectorStoreError(f"zvec failed to {action} {where}: {text}") from exc


class ZvecFileStore(FileStore):
    """A zvec collection with cosine HNSW; filters pushed down, exact until ``optimize()``."""

    name: ClassVar[str] = "zvec"

    class Settings(ComponentSettings):
        collection: str = "chunks"
        """Collection folder name inside ``<state_dir>/zvec/``."""
        read_only: bool = False
        """Open as a reader: many readers may share the collection, writes are refused."""
        hnsw_m: int = Field(default=32, ge=4, le=128)
        hnsw_ef_construction: int = Field(default=200, ge=16, le=2000)
        hnsw_ef: int = Field(default=300, ge=10, le=5000)
        """Candidate list size at query time (recall against speed)."""

        @field_validator("collection")
        @classmethod
        def _plain_name(cls, value: str) -> str:
            return check_filename(value)

    settings: Settings

    def __init__(
        self, settings: ComponentSettings | None = None, context: ComponentContext | None = None
    ):
        super().__init__(settings, context)
        if context is None:
            raise PluginError("the zvec vector store needs a workspace context (state_dir)")
        self._root = context.state_dir / "zvec"
        self._path = self._root / self.settings.collection
        self._meta_path = self._root / f"{self.settings.collection}.meta.json"
        self._lock = threading.RLock()
        self._coll: Any = None
        self._model_id: str | None = None
        self._dim = 0

    def state_files(self) -> list[Path]:
        """The collection's files and its meta file, less what the RocksDB stores inside it
        rewrite each time the collection opens (their manifest, options, lock and log files and
        empty write-ahead logs): those change with no vector changing, and would break the drift
        seal in every process. What holds vectors and ids (segments, SST tables, a write-ahead
        log with records, the deletion map, zvec's own manifest) is watched."""
        files = [self._meta_path]
        for folder, _, names in os.walk(self._path):
            for name in names:
                path = Path(folder) / name
                if _ROCKSDB_BOOKKEEPING.fullmatch(name) or (
                    name.endswith(".log") and _size(path) == 0
                ):
                    continue
                files.append(path)
        return sorted(files)

    # -- lifecycle ---------------------------------------------------------------------------

    def open(self, model_id: str, dim: int) -> None:
        """Open (or create) the collection for ``model_id``/``dim``; another space is dropped."""
        if not model_id or int(dim) <= 0:
            raise VectorStoreError(f"open() needs a model id and a positive dim, got {dim!r}")
        dim = int(dim)
        zvec = _zvec()
        with self._lock:
            self._close_collection()
            wanted = {"version": META_VERSION, "model_id": model_id, "dim": dim}
            exists = self._path.exists()
            if self.settings.read_only:
                if exists and self._read_meta() != wanted:
                    raise VectorStoreError(
                        f"the zvec collection {self._path} holds vectors of another model "
                        f"({self._read_meta()}); open it for writing once to re-embed"
                    )
                if exists:
                    with _wrapped("open", self._path):
                        self._coll = zvec.open(
                            str(self._path), zvec.CollectionOption(read_only=True)
                        )
                self._model_id, self._dim = model_id, dim
                return
            if exists:
                with _wrapped("open", self._path):
                    coll = zvec.open(str(self._path), zvec.CollectionOption(read_only=False))
                if self._read_meta() == wanted and self._stored_dim(coll) == dim:
                    self._coll = coll
                else:  # another vector space: never mix, drop and let the caller re-embed
                    with _wrapped("drop", self._path):
                        coll.destroy()
                        with contextlib.suppress(Exception):
                            coll.close()
                    shutil.rmtree(self._path, ignore_errors=True)
            if self._coll is None:
                self._root.mkdir(parents=True, exist_ok=True)
                with _wrapped("create", self._path):
                    self._coll = zvec.create_and_open(str(self._path), self._schema(zvec, dim))
                self._write_meta(wanted)
            self._model_id, self._dim = model_id, dim

    def close(self) -> None:
        """Flush and release the collection (and its lock); ``open()`` again before reuse."""
        with self._lock:
            self._close_collection()
            self._model_id = None

    def _close_collection(self) -> None:
        if self._coll is not None:
            coll, self._coll = self._coll, None
            with _wrapped("close", self._path):
                coll.close()

    def _schema(self, zvec: Any, dim: int) -> Any:
        invert = zvec.InvertIndexParam
        return zvec.CollectionSchema(
            name=self.settings.collection,
            fields=[
                zvec.FieldSchema("path", zvec.DataType.STRING, index_param=invert()),
                zvec.FieldSchema("status", zvec.DataType.STRING, index_param=invert()),
                zvec.FieldSchema(
                    "date",
                    zvec.DataType.STRING,
                    nullable=True,
                    index_param=invert(enable_range_optimization=True),
                ),
                zvec.FieldSchema("tags", zvec.DataType.ARRAY_STRING, index_param=invert()),
            ],
            vectors=[
                zvec.VectorSchema(
                    VECTOR,
                    zvec.DataType.VECTOR_FP32,
                    dim,
                    index_param=zvec.HnswIndexParam(
                        metric_type=zvec.MetricType.COSINE,
                        m=self.settings.hnsw_m,
                        ef_construction=self.settings.hnsw_ef_construction,
                    ),
                )
            ],
        )

    @staticmethod
    def _stored_dim(coll: Any) -> int:
        with contextlib.suppress(Exception):
            return int(coll.schema.vector(VECTOR).dimension)
        return -1

    def _read_meta(self) -> dict[str, Any] | None:
        try:
            return json.loads(self._meta_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def _write_meta(self, meta: dict[str, Any]) -> None:
        tmp = self._meta_path.with_suffix(".tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(meta, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self._meta_path)

    # -- writes ------------------------------------------------------------------------------

    def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Insert or replace by ``chunk_id``; the last of duplicate ids in one call wins."""
        if not records:
            return
        zvec = _zvec()
        latest = {r.chunk_id: r for r in records}
        recs = list(latest.values())
        with self._lock:
            coll = self._writable()
            vectors = unit_rows(np.stack([np.asarray(r.vector) for r in recs]), self._dim)
            docs = [
                zvec.Doc(
                    id=r.chunk_id,
                    vectors={VECTOR: v},
                    fields={
                        "path": r.path,
                        "status": r.status,
                        "date": r.date or None,
                        "tags": [encode_tag(t) for t in expand_tags(r.tags)],
                    },
                )
                for r, v in zip(recs, vectors, strict=True)
            ]
            with _wrapped("write to", self._path):
                statuses = coll.upsert(docs)
            failed = [
                (d.id, s.message()) for d, s in zip(docs, statuses, strict=True) if not s.ok()
            ]
            if failed:
                raise VectorStoreError(f"zvec refused {len(failed)} record(s), first: {failed[0]}")

    def delete_paths(self, paths: Sequence[str]) -> None:
        """Remove every record of these files (a filter delete; a scan for unquotable paths)."""
        if isinstance(paths, str):
            paths = [paths]
        with self._lock:
            coll = self._writable()
            plain = [p for p in paths if safe_literal(p)]
            odd = set(paths) - set(plain)
            with _wrapped("delete from", self._path):
                for start in range(0, len(plain), 200):
                    batch = plain[start : start + 200]
                    coll.delete_by_filter("path IN (" + ", ".join(quote(p) for p in batch) + ")")
                if odd:
                    with coll.iter_docs(output_fields=["path"], include_vector=False) as docs:
                        doomed = [d.id for d in docs if d.fields.get("path") in odd]
                    if doomed:
                        coll.delete(doomed)

    def clear(self) -> None:
        """Drop every record (the collection is recreated empty, its vector space kept)."""
        with self._lock:
            coll = self._writable()
            zvec = _zvec()
            with _wrapped("clear", self._path):
                coll.destroy()
                with contextlib.suppress(Exception):
                    coll.close()
            self._coll = None
            shutil.rmtree(self._path, ignore_errors=True)
            with _wrapped("create", self._path):
                self._coll = zvec.create_and_open(str(self._path), self._schema(zvec, self._dim))

    def optimize(self) -> None:
        """Build the HNSW graph over everything written so far (and merge segments)."""
        with self._lock:
            coll = self._writable()
            with _wrapped("optimize", self._path):
                coll.optimize()

    def flush(self) -> None:
        """Make the writes so far durable."""
        with self._lock:
            if self._coll is not None and not self.settings.read_only:
                with _wrapped("flush", self._path):
                    self._coll.flush()

    # -- reads -------------------------------------------------------------------------------

    def search(
        self, vector: np.ndarray, limit: int, filters: SearchFilters | None = None
    ) -> list[tuple[str, float]]:
        """Top ``limit`` by cosine among records passing ``filters``, best first."""
        self._require_open()
        query = unit_rows(vector, self._dim, "the query vector")[0]
        plan = zvec_plan(filters, encode_tag)
        if limit <= 0 or plan.empty:
            return []
        zvec = _zvec()
        with self._lock:
            coll = self._coll
            if coll is None:
                return []  # a reader before any writer created the collection
            total = self._count(coll)
            if total == 0:
                return []
            topk = min(limit if plan.exact else max(limit * 4, 64), total)
            q = zvec.Query(
                field_name=VECTOR, vector=query, param=zvec.HnswQueryParam(ef=self.settings.hnsw_ef)
            )
            # The fields are read only to post-filter; an exact plan needs ids and scores alone
            # (fetching four fields per hit was a quarter of the query's time at 1,000 notes).
            fields = [] if plan.exact else _FIELDS
            while True:
                with _wrapped("search", self._path):
                    docs = coll.query(q, topk=topk, filter=plan.expression, output_fields=fields)
                hits = [
                    (d.id, 1.0 - float(d.score))  # zvec reports cosine distance
                    for d in docs
                    if plan.exact or self._passes(d, filters)
                ]
                if len(hits) >= limit or len(docs) < topk or topk >= total:
                    return hits[:limit]
                topk = min(topk * 4, total)

    @staticmethod
    def _passes(doc: Any, filters: SearchFilters | None) -> bool:
        tags = [_decode_tag(t) for t in (doc.fields.get("tags") or [])]
        return matches(
            filters, doc.fields.get("path"), doc.fields.get("status"), doc.fields.get("date"), tags
        )

    def ids(self) -> set[str]:
        """Every stored chunk id."""
        self._require_open()
        with self._lock:
            if self._coll is None:
                return set()
            with (
                _wrapped("list", self._path),
                self._coll.iter_docs(output_fields=[], include_vector=False) as docs,
            ):
                return {d.id for d in docs}

    def stats(self) -> dict[str, Any]:
        """Numbers for ``reme status``: vectors, index coverage, vector space."""
        with self._lock:
            if self._coll is None:
                return {"vectors": 0, "model_id": self._model_id, "dim": self._dim or None}
            with _wrapped("read stats of", self._path):
                st = self._coll.stats
                completeness = dict(st.index_completeness)
            return {
                "vectors": int(st.doc_count),
                "indexed": float(completeness.get(VECTOR, 0.0)),
                "model_id": self._model_id,
                "dim": self._dim,
                "read_only": self.settings.read_only,
            }

    # -- helpers -----------------------------------------------------------------------------

    def _count(self, coll: Any) -> int:
        with _wrapped("count", self._path):
            return int(coll.stats.doc_count)

    def _require_open(self) -> None:
        if self._model_id is None:
            raise VectorStoreError("the zvec vector store is not open: call open(model_id, dim)")

    def _writable(self) -> Any:
        self._require_open()
        if self.settings.read_only:
            raise VectorStoreError(
                f"the zvec collection {self._path} is opened read-only; writes need read_only: false"
            )
        return self._coll


def _decode_tag(stored: str) -> str:
    """Undo ``encode_tag``."""
    if "~" not in stored:
        return stored
    out: list[str] = []
    i = 0
    while i < len(stored):
        if stored[i] == "~" and i + 2 < len(stored):
            out.append(chr(int(stored[i + 1 : i + 3], 16)))
            i += 3
        else:
            out.append(stored[i])
            i += 1
    return "".join(out)


@hookimpl
def register_file_stores(register: Callable[[type[FileStore]], None]) -> None:
    """Register the zvec store as ``zvec``."""
    register(ZvecFileStore)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return -1
