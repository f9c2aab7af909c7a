"""The exact meaning of ``SearchFilters`` for one stored record: the reference every vector store
and the conformance kit hold a store to.

A record carries its path, status, date and ancestor-expanded tags (``VectorRecord``); a store may
push a filter down into its backend however it likes, but what passes must be what ``matches``
passes. Here in the core, not in a plugin, because the kit checks third-party stores against it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from reme_core.schema import SearchFilters
from reme_core.schema.tags import normalise_tag
from reme_core.workspace.paths import path_matches


def expand_tags(tags: Iterable[str]) -> tuple[str, ...]:
    """Normalised tags plus their ancestors (``a/b/c`` also gives ``a/b`` and ``a``), unique."""
    out: dict[str, None] = {}
    for raw in tags:
        tag = normalise_tag(raw)
        if not tag:
            continue
        parts = tag.split("/")
        for i in range(1, len(parts) + 1):
            out["/".join(parts[:i])] = None
    return tuple(out)


def query_tags(filters: SearchFilters) -> list[str]:
    """The filter's tags in stored form; a blank tag stays blank (it matches nothing)."""
    return list(dict.fromkeys(normalise_tag(t) for t in filters.tags))


def date_ok(date: str | None, filters: SearchFilters) -> bool:
    """A record without a date fails any date bound."""
    if filters.since is None and filters.until is None:
        return True
    if not date:
        return False
    if filters.since is not None and date < filters.since.isoformat():
        return False
    return not (filters.until is not None and date > filters.until.isoformat())


def tags_ok(tags: Iterable[str], wanted: Sequence[str], mode: str) -> bool:
    """``wanted`` in stored form against a record's ancestor-expanded tags."""
    if not wanted:
        return True
    have = set(tags)
    if mode == "all":
        return all(t and t in have for t in wanted)
    return any(t and t in have for t in wanted)


def matches(
    filters: SearchFilters | None, path: str, status: str, date: str | None, tags: Iterable[str]
) -> bool:
    """The exact meaning of ``filters`` for one record (``None`` passes everything)."""
    if filters is None:
        return True
    if status not in filters.statuses:
        return False
    if not date_ok(date, filters):
        return False
    if not tags_ok(tags, query_tags(filters), filters.tag_mode):
        return False
    return not filters.paths or path_matches(path, filters.paths)
