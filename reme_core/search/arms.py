"""Search arms: each ranks chunk ids for a query among the ids the filters allow."""

from __future__ import annotations

from typing import Protocol

from reme_core.components import KeywordIndex

# Defined with the other errors, below both layers, because the index layer raises it
# (``VectorIndex.rank``); importing it from here keeps working.
from reme_core.errors import ArmUnavailable as ArmUnavailable
from reme_core.schema import SearchFilters
from reme_core.search.allowed import ChunkIds


class SearchArm(Protocol):
    name: str

    def rank(
        self, query: str, limit: int, allowed_ids: set[str], filters: SearchFilters
    ) -> list[tuple[str, float]]:
        """``(chunk_id, arm score)`` best first, only ids in ``allowed_ids``.

        ``filters`` are what ``allowed_ids`` was computed from, for arms that push them down.
        The engine passes a ``ChunkIds``: asking whether an id is in it is one lookup of the
        id's path; iterating it or taking its ``len`` builds every id once (``materialised``).
        """


class KeywordArm:
    """BM25 (or any KeywordIndex plugin)."""

    name = "keyword"

    def __init__(self, index: KeywordIndex):
        self.index = index

    def rank(
        self, query: str, limit: int, allowed_ids: set[str], filters: SearchFilters
    ) -> list[tuple[str, float]]:
        if not isinstance(allowed_ids, ChunkIds):
            return self.index.search(query, limit, allowed_ids)
        if not allowed_ids or limit <= 0:
            return []
        if not allowed_ids.wide:  # a narrow filter: the index masks its chunks
            return self.index.search(query, limit, allowed_ids.materialised())
        # Most notes pass (the default filters): rank unfiltered, drop the hits that fail, and
        # ask for more while too few are left and the index has more. The index's order is one
        # total order (score, then id), so what is kept is the filtered ranking's top.
        # The margin covers the few notes a wide filter drops (archived ones: 5% of the
        # benchmarks' workspace) without a second search in nearly every query.
        k = limit + max(limit // 4, 8)
        paths = allowed_ids.paths  # ``in allowed_ids`` inlined: a hit id is ``<path>#<ordinal>``
        while True:
            hits = self.index.search(query, k, None)
            kept = [hit for hit in hits if hit[0].rpartition("#")[0] in paths]
            if len(kept) >= limit or len(hits) < k:
                return kept[:limit]
            k *= 4


class VectorSource(Protocol):
    def rank(
        self, query: str, limit: int, allowed_ids: set[str], filters: SearchFilters
    ) -> list[tuple[str, float]]: ...

    def notes(self) -> list[str]: ...


class VectorArm:
    """Nearest chunks by embedding (``reme_core.index.vectors.VectorIndex``)."""

    name = "vector"

    def __init__(self, source: VectorSource):
        self.source = source

    def rank(
        self, query: str, limit: int, allowed_ids: set[str], filters: SearchFilters
    ) -> list[tuple[str, float]]:
        return self.source.rank(query, limit, allowed_ids, filters)

    def notes(self) -> list[str]:
        """Caveats a response must carry (partial coverage, a recent failure)."""
        return self.source.notes()

    @property
    def model_id(self) -> str | None:
        """The embedding model's id once the index is open (abstention's calibration key)."""
        return getattr(self.source, "model_id", None)
