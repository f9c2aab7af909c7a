"""Turns SearchFilters into the notes every arm may return chunks of."""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection

from reme_core.components import TagIndex
from reme_core.errors import SearchError
from reme_core.index.catalog import Catalog
from reme_core.schema import SearchFilters
from reme_core.schema.note import NOTE_STATUSES
from reme_core.search.expiry import Modified, Policy, expired_paths


def allowed_paths(
    filters: SearchFilters,
    catalog: Catalog,
    tags: TagIndex | None,
    *,
    within: Collection[str] | None = None,
    today: dt.date | None = None,
    policy: Policy | None = None,
    modified: Modified | None = None,
) -> set[str]:
    """The notes with a chunk passing every filter (only of the notes ``within``, when given):
    a chunk id passes exactly when its note's path is among them. With ``today``, a note whose
    ``expires`` day has come, or that is past its folder's ``policy`` (``lifecycle.expire``),
    counts as archived (``reme_core.search.expiry``). Filters that cannot be honoured raise,
    never widen."""
    tagged = _checked(filters, tags)
    if within is not None:
        tagged = set(within) if tagged is None else tagged & set(within)

    def query(statuses: list[str], paths: set[str] | None) -> set[str]:
        return catalog.chunked_paths(
            statuses=statuses,
            since=filters.since,
            until=filters.until,
            path_patterns=filters.paths,
            paths=paths,
        )

    found = query(list(filters.statuses), tagged)
    # Expired notes (usually none: one small query of the notes naming expires) count as
    # archived; only when there are some is the catalog asked again, for those alone.
    expired = set() if today is None else expired_paths(catalog, today, tagged, policy, modified)
    if not expired:
        return found
    if "archived" not in filters.statuses:
        return found - expired
    others = [s for s in NOTE_STATUSES if s not in filters.statuses]
    if others:  # an expired note of another status is asked for as archived
        found |= query(others, expired)
    return found


def _checked(filters: SearchFilters, tags: TagIndex | None) -> set[str] | None:
    """Raise for filters that cannot be honoured; the paths the tag filter allows (None: any)."""
    if filters.since and filters.until and filters.since > filters.until:
        raise SearchError(f"--since {filters.since} is after --until {filters.until}")
    if not filters.statuses:
        raise SearchError(
            "status filter is empty: name at least one of active, archived, superseded"
        )
    if not filters.tags:
        return None
    if tags is None:
        raise SearchError("tag filter given but no tag index is configured")
    return tags.paths(filters.tags, mode=filters.tag_mode)
