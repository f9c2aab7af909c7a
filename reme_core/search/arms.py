"""A search arm ranks chunk ids for a query, restricted to the ids the filters allow."""

from __future__ import annotations

from typing import Protocol

from reme_core.components import KeywordIndex


class SearchArm(Protocol):
    name: str

    def rank(self, query: str, limit: int, allowed_ids: set[str] | None) -> list[str]:
        """Chunk ids best first; only ids in ``allowed_ids`` when it is given."""


class KeywordArm:
    """BM25 (or any KeywordIndex plugin)."""

    name = "keyword"

    def __init__(self, index: KeywordIndex):
        self.index = index

    def rank(self, query: str, limit: int, allowed_ids: set[str] | None) -> list[str]:
        return [chunk_id for chunk_id, _ in self.index.search(query, limit, allowed_ids)]
