"""Pydantic models that cross module and process boundaries."""

from reme_core.schema.chunk import Chunk
from reme_core.schema.link import Link
from reme_core.schema.note import NoteStatus, NoteSummary
from reme_core.schema.search import LinkedNote, SearchFilters, SearchHit, SearchResponse

__all__ = [
    "Chunk",
    "Link",
    "LinkedNote",
    "NoteStatus",
    "NoteSummary",
    "SearchFilters",
    "SearchHit",
    "SearchResponse",
]
