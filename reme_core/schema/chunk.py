from __future__ import annotations

import hashlib

from pydantic import BaseModel, Field


class Chunk(BaseModel):
    """A searchable piece of one file. Lines are 1-based and inclusive."""

    path: str
    ordinal: int = Field(ge=0)
    start_line: int = Field(ge=1)
    end_line: int = Field(ge=1)
    text: str
    heading: str = ""
    """Heading breadcrumb ("Title > Section"), already prefixed to ``text`` by markdown chunkers."""
    keyword_text: str | None = None
    """What the keyword arm indexes when it differs from ``text`` (None: ``text``), e.g. the
    note's date as words above it; ``text`` stays what a hit shows."""
    vector_text: str | None = None
    """What the vector arm embeds when it differs from ``text`` (None: ``text``), e.g. the turn
    a conversation turn replies to, quoted above it."""

    @property
    def keyword_body(self) -> str:
        """The text the keyword arm indexes."""
        return self.text if self.keyword_text is None else self.keyword_text

    @property
    def vector_body(self) -> str:
        """The text the vector arm embeds (the embedding cache is keyed by its hash)."""
        return self.text if self.vector_text is None else self.vector_text

    @property
    def id(self) -> str:
        return chunk_id(self.path, self.ordinal)

    @property
    def content_hash(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


def chunk_id(path: str, ordinal: int) -> str:
    """Stable id of a chunk: the file path and its position in the file."""
    return f"{path}#{ordinal}"


def chunk_path(chunk_id_: str) -> str:
    """The file path a chunk id belongs to."""
    return chunk_id_.rsplit("#", 1)[0]
