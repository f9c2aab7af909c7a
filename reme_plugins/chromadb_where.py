"""How the chromadb store lays out each record's metadata, and ``SearchFilters`` as a chroma
``where`` over it.

Status (``$in``), date range (an int ``yyyymmdd`` key), tags (``$contains`` on a list of tags with
their ancestors) and plain path prefixes (``$contains`` on a list of the path and its folders) go
into ``where``; glob paths cannot, so they come back as paths for the store to match after the
query. Path filters come back either way: the store always re-checks them exactly.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from typing import Any, Literal

from reme_core.api import SearchFilters, VectorRecord, path_matches
from reme_plugins.tag_sqlite import normalise_tag

_PLAIN_PATH_RE = re.compile(r"[^*?\[\\\0]+")


def _day(value: str | dt.date) -> int:
    """``2024-03-09`` -> ``20240309`` (sortable, and chroma compares ints with $gte/$lte)."""
    day = value if isinstance(value, dt.date) else dt.date.fromisoformat(value)
    return day.year * 10000 + day.month * 100 + day.day


def _path_keys(path: str) -> list[str]:
    """The path and each folder above it: a plain prefix filter matches one of them exactly."""
    parts = path.split("/")
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def _plain_prefixes(patterns: Sequence[str]) -> list[str] | None:
    """The patterns as exact path keys when every one is a plain prefix, else None (post-filter)."""
    out: list[str] = []
    for raw in patterns:
        p = raw.strip()
        if (
            not p
            or not _PLAIN_PATH_RE.fullmatch(p)
            or p != p.strip("/")
            or p.startswith("./")
            or ".." in p.split("/")
        ):
            return None
        out.append(p)
    return out


def _any_or_all(field: str, values: Sequence[str], mode: Literal["any", "all"]) -> dict[str, Any]:
    clauses = [{field: {"$contains": v}} for v in dict.fromkeys(values)]
    if len(clauses) == 1:
        return clauses[0]
    return {"$or" if mode == "any" else "$and": clauses}


def record_metadata(record: VectorRecord) -> dict[str, Any]:
    """The metadata ``record`` is stored with: the fields ``where_clause`` filters on."""
    meta: dict[str, Any] = {
        "path": record.path,
        "path_keys": _path_keys(record.path),
        "status": record.status,
    }
    if record.date:
        meta["date"] = str(record.date)
        meta["day"] = _day(record.date)
    tags = [t for t in dict.fromkeys(record.tags) if t]
    if tags:  # chroma refuses an empty list
        meta["tags"] = tags
    return meta


def where_clause(filters: SearchFilters | None) -> tuple[dict[str, Any] | bool, list[str] | None]:
    """The pushed-down ``where`` (False: nothing can match) and any paths to check after."""
    if filters is None:
        return {}, None
    clauses: list[dict[str, Any]] = []
    if not filters.statuses:
        return False, None
    statuses = list(dict.fromkeys(filters.statuses))
    clauses.append({"status": {"$in": statuses}})
    if filters.since is not None:
        clauses.append({"day": {"$gte": _day(filters.since)}})
    if filters.until is not None:
        clauses.append({"day": {"$lte": _day(filters.until)}})
    if filters.since and filters.until and filters.since > filters.until:
        return False, None
    if filters.tags:
        tags = [normalise_tag(t) for t in filters.tags]
        if not all(tags):  # a blank tag matches nothing, as in the tag index
            if filters.tag_mode == "all" or not any(tags):
                return False, None
            tags = [t for t in tags if t]
        clauses.append(_any_or_all("tags", tags, filters.tag_mode))
    post_paths: list[str] | None = None
    if filters.paths and not path_matches("", filters.paths):  # "" or "/" = everything
        prefixes = _plain_prefixes(filters.paths)
        if prefixes is not None:
            clauses.append(_any_or_all("path_keys", prefixes, "any"))
        post_paths = list(filters.paths)  # re-checked exactly either way
    where: dict[str, Any] = clauses[0] if len(clauses) == 1 else {"$and": clauses}
    return where, post_paths
