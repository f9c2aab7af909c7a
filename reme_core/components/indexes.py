"""Contracts of the derived indexes over notes: the chunker that feeds them, the keyword index, the
link graph and the tag index."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

from reme_core.components.base import Component
from reme_core.schema import Chunk, Link


class Chunker(Component, ABC):
    """Splits one file's text into chunks with 1-based inclusive line ranges."""

    @abstractmethod
    def chunk(self, path: str, text: str) -> list[Chunk]:
        """Return chunks in document order; ``ordinal`` counts from 0 and ids are ``path#ordinal``."""


TextSource = Callable[[Sequence[str]], Mapping[str, str]]
"""Chunk id -> text, for the ids the catalog holds (``Catalog.chunk_texts``)."""


class KeywordIndex(Component, ABC):
    """A full-text index over chunks, updated per file."""

    def attach_text_source(self, texts: TextSource) -> None:
        """The indexer hands over the catalog's chunk texts before any write. An index that
        keeps every chunk's text to rebuild itself from may read them back from here instead of
        storing a second copy; the default ignores it."""

    @abstractmethod
    def upsert(self, path: str, chunks: Sequence[Chunk]) -> None:
        """Replace every chunk of ``path`` with ``chunks`` (an empty list removes the file)."""

    @abstractmethod
    def delete(self, path: str) -> None:
        """Remove every chunk of ``path``."""

    @abstractmethod
    def search(
        self, query: str, limit: int, allowed_ids: set[str] | None = None
    ) -> list[tuple[str, float]]:
        """Return ``(chunk_id, raw_score)`` best first, only among ``allowed_ids`` when given."""

    @abstractmethod
    def clear(self) -> None:
        """Drop everything (used by reindex)."""

    def optimize(self) -> None:
        """Compact incremental state into the main structure."""

    def refresh(self) -> None:
        """Make the next search cheap: do now what a search would otherwise do first.

        The indexer calls it right after each write's exclusive section, so the writer pays for
        rebuilding incremental state rather than the first search after the write. An index must
        stay correct without it (used outside the indexer, its searches do that work lazily).
        """

    def flush(self) -> None:
        """Persist pending state to ``state_dir``."""

    def stats(self) -> dict[str, Any]:
        """Numbers for ``reme status``."""
        return {}

    def chunk_ids(self) -> set[str] | None:
        """Every chunk id the index holds (for the drift check against the catalog); None when
        the index cannot list them cheaply, which turns the check off for it."""
        return None


class Graph(Component, ABC):
    """Adjacency between notes, from wikilinks. Unresolved links are kept as pending edges."""

    def linked_paths(self, paths: Sequence[str]) -> dict[str, tuple[list[str], list[str]]]:
        """For link expansion, per path: the targets of its resolved links (line order) and the
        sources of resolved links to it (by source, then line), repeats kept. This default reads
        ``outbound`` and ``inbound``; a graph may answer every path in one read."""
        return {
            path: (
                [link.target for link in self.outbound(path) if link.target],
                [link.source for link in self.inbound(path)],
            )
            for path in dict.fromkeys(paths)
        }

    @abstractmethod
    def set_links(self, source: str, links: Sequence[Link]) -> None:
        """Replace the outbound links of ``source``."""

    @abstractmethod
    def remove(self, source: str) -> None:
        """Forget ``source``'s outbound links (its inbound edges become pending)."""

    @abstractmethod
    def outbound(self, path: str) -> list[Link]:
        """Links written in ``path``, resolved or not."""

    @abstractmethod
    def inbound(self, path: str) -> list[Link]:
        """Resolved links from other notes that point at ``path``."""

    @abstractmethod
    def unresolved(self) -> list[Link]:
        """Every link whose target is missing or ambiguous."""

    @abstractmethod
    def clear(self) -> None:
        """Drop everything (used by reindex)."""

    def sources(self) -> set[str] | None:
        """Every note with stored links (for the drift check); None when not listed cheaply."""
        return None


class TagIndex(Component, ABC):
    """Tags per note, from frontmatter ``tags``."""

    @abstractmethod
    def set_tags(self, path: str, tags: Iterable[str]) -> None:
        """Replace the tags of ``path``."""

    @abstractmethod
    def remove(self, path: str) -> None:
        """Forget ``path``."""

    @abstractmethod
    def paths(self, tags: Sequence[str], mode: Literal["any", "all"] = "any") -> set[str]:
        """Paths carrying any (or all) of ``tags``. Tags compare case-insensitively."""

    @abstractmethod
    def tags(self, path: str | None = None) -> dict[str, int]:
        """Tag counts over the workspace, or the tags of one path (count 1 each)."""

    @abstractmethod
    def clear(self) -> None:
        """Drop everything (used by reindex)."""

    def tagged_paths(self) -> set[str] | None:
        """Every path with at least one tag (for the drift check); None when not listed cheaply."""
        return None
