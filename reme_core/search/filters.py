"""Turns SearchFilters into the set of chunk ids every arm may return."""

from __future__ import annotations

from collections.abc import Collection

from reme_core.components import TagIndex
from reme_core.errors import SearchError
from reme_core.index.catalog import Catalog
from reme_core.schema import SearchFilters


def allowed_chunk_ids(
    filters: SearchFilters,
    catalog: Catalog,
    tags: TagIndex | None,
    *,
    within: Collection[str] | None = None,
) -> set[str]:
    """Chunk ids passing every filter (only of the notes ``within``, when given).

    Filters that cannot be honoured raise, never widen.
    """
    return set().union(*allowed_by_path(filters, catalog, tags, within=within).values())


def allowed_by_path(
    filters: SearchFilters,
    catalog: Catalog,
    tags: TagIndex | None,
    *,
    within: Collection[str] | None = None,
) -> dict[str, list[str]]:
    """``allowed_chunk_ids`` grouped by note path."""
    if filters.since and filters.until and filters.since > filters.until:
        raise SearchError(f"--since {filters.since} is after --until {filters.until}")
    if not filters.statuses:
        raise SearchError(
            "status filter is empty: name at least one of active, archived, superseded"
        )
    tagged: set[str] | None = None
    if filters.tags:
        if tags is None:
            raise SearchError("tag filter given but no tag index is configured")
        tagged = tags.paths(filters.tags, mode=filters.tag_mode)
    if within is not None:
        tagged = set(within) if tagged is None else tagged & set(within)
    return catalog.chunk_ids_by_path(
        statuses=list(filters.statuses),
        since=filters.since,
        until=filters.until,
        path_patterns=filters.paths,
        paths=tagged,
    )
