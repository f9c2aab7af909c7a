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
