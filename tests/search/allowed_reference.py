"""The allowed set computed the earlier way, from chunk ids grouped by note
(``Catalog.chunk_ids_by_path``): the reference ``reme_core.search.filters.allowed_paths`` (one row
per note) and the searches' cached sets are checked against (issue 21)."""

from __future__ import annotations

import datetime as dt

from reme_core.components import TagIndex
from reme_core.index.catalog import Catalog
from reme_core.schema import SearchFilters
from reme_core.schema.note import NOTE_STATUSES
from reme_core.search.expiry import Modified, Policy, expired_paths


def reference_by_path(
    filters: SearchFilters,
    catalog: Catalog,
    tags: TagIndex | None,
    *,
    today: dt.date | None = None,
    policy: Policy | None = None,
    modified: Modified | None = None,
) -> dict[str, list[str]]:
    """The chunk ids passing ``filters``, by note path; an expired note (with ``today``) counts
    as archived."""
    tagged = tags.paths(filters.tags, mode=filters.tag_mode) if filters.tags and tags else None

    def query(statuses: list[str], paths: set[str] | None) -> dict[str, list[str]]:
        return catalog.chunk_ids_by_path(
            statuses=statuses,
            since=filters.since,
            until=filters.until,
            path_patterns=filters.paths,
            paths=paths,
        )

    by_path = query(list(filters.statuses), tagged)
    expired = set() if today is None else expired_paths(catalog, today, tagged, policy, modified)
    if "archived" not in filters.statuses:
        return {path: ids for path, ids in by_path.items() if path not in expired}
    others = [s for s in NOTE_STATUSES if s not in filters.statuses]
    if others and expired:  # an expired note of another status is asked for as archived
        by_path.update(query(others, expired))
    return by_path


def reference_chunk_ids(
    filters: SearchFilters, catalog: Catalog, tags: TagIndex | None
) -> set[str]:
    """Every chunk id of ``reference_by_path`` (no expiry)."""
    return set().union(*reference_by_path(filters, catalog, tags).values())
