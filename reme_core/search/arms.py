"""Search arms: each ranks chunk ids for a query among the ids the filters allow."""

from __future__ import annotations

from typing import Protocol

from reme_core.components import KeywordIndex

# Defined with the other errors, below both layers, because the index layer raises it
# (``VectorIndex.rank``); importing it from here keeps working.
from reme_core.errors import ArmUnavailable as ArmUnavailable
from reme_core.schema import SearchFilters


class SearchArm(Protocol):
    name: str

    def rank(
        self, query: str, limit: int, allowed_ids: set[str], filters: SearchFilters
    ) -> list[tuple[str, float]]:
        """``(chunk_id, arm score)`` best first, only ids in ``allowed_ids``.

        ``filters`` are what ``allowed_ids`` was computed from, for arms that push them down.
        """


class KeywordArm:
    """BM25 (or any KeywordIndex plugin)."""

    name = "keyword"

    def __init__(self, index: KeywordIndex):
        self.index = index

    def rank(
        self, query: str, limit: int, allowed_ids: set[str], filters: SearchFilters
    ) -> list[tuple[str, float]]:
        return self.index.search(query, limit, allowed_ids)


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
