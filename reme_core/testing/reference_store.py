"""The conformance kit's own reference vector store: exact cosine search over every record in
memory, filters applied with ``reme_core.search.record_filters.matches``.

``VectorStoreConformance`` holds a store under test to this one's answers. It lives in the kit,
not in a plugin, so a third-party store is checked against the core's meaning of a search and
the kit works with only reme_core installed. It keeps nothing on disk: it is not itself a store
to configure, and it does not pass the suite's reopen and crash tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from reme_core.components import FileStore, VectorRecord
from reme_core.errors import RemeError
from reme_core.schema import SearchFilters
from reme_core.search.record_filters import expand_tags, matches


def _unit(vectors: np.ndarray, dim: int, what: str) -> np.ndarray:
    """Rows as float32 of unit length, as every store compares them."""
    arr = np.asarray(vectors, dtype=np.float32)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] != dim:
        raise RemeError(f"{what} has shape {tuple(arr.shape)}, this store holds dim {dim}")
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    if not np.all(np.isfinite(arr)) or np.any(norms == 0):
        raise RemeError(f"{what} has no direction to compare (zero, NaN or infinity)")
    return arr / norms


class ReferenceStore(FileStore):
    """Exact search over records held in a dict; the slow, obviously right answer."""

    name: ClassVar[str] = "reference"

    _dim = 0
    _records: dict[str, tuple[VectorRecord, np.ndarray]]

    def open(self, model_id: str, dim: int) -> None:
        """Start an empty vector space of ``dim`` (nothing survives the instance)."""
        if not model_id or int(dim) <= 0:
            raise RemeError(f"open() needs a model id and a positive dim, got {dim!r}")
        self._dim = int(dim)
        self._records = {}

    def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Insert or replace by ``chunk_id``; tags are kept ancestor-expanded."""
        for rec in records:
            vector = _unit(np.asarray(rec.vector), self._dim, "a vector")[0]
            kept = VectorRecord(
                rec.chunk_id, rec.path, vector, rec.status, rec.date, expand_tags(rec.tags)
            )
            self._records[rec.chunk_id] = (kept, vector)

    def delete_paths(self, paths: Sequence[str]) -> None:
        """Remove every record of these files."""
        gone = {paths} if isinstance(paths, str) else set(paths)
        self._records = {k: v for k, v in self._records.items() if v[0].path not in gone}

    def search(
        self, vector: np.ndarray, limit: int, filters: SearchFilters | None = None
    ) -> list[tuple[str, float]]:
        """Every record passing ``filters``, best cosine first, the first ``limit`` of them."""
        query = _unit(vector, self._dim, "the query vector")[0]
        passing = [
            (rec.chunk_id, vec)
            for rec, vec in self._records.values()
            if matches(filters, rec.path, rec.status, rec.date, rec.tags)
        ]
        if limit <= 0 or not passing:
            return []
        scores = np.stack([vec for _, vec in passing]) @ query
        order = np.argsort(-scores, kind="stable")[:limit]
        return [(passing[i][0], float(scores[i])) for i in order]

    def ids(self) -> set[str]:
        """Every stored chunk id."""
        return set(self._records)

    def clear(self) -> None:
        """Drop every record (the vector space stays)."""
        self._records = {}
