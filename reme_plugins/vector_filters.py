"""What the vector stores share: checking vectors, and ``SearchFilters`` as a pushed-down zvec
filter expression. The exact meaning of a filter (the reference every store is held to, tags
normalised and ancestor-expanded) is the core's, ``reme_core.search.record_filters``; its names
are imported here too, where the stores have always found them.

Pushing down is allowed to be wider than the filter (a path prefix cut short at a character the
filter grammar cannot carry safely), never narrower; ``FilterPlan.exact`` says whether the store
must post-filter and over-fetch to stay exact.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from reme_core.api import RemeError, SearchFilters

# Re-exported (``x as x``): the stores import them from here.
from reme_core.api import date_ok as date_ok
from reme_core.api import expand_tags as expand_tags
from reme_core.api import query_tags as query_tags
from reme_core.api import record_matches as matches  # noqa: F401  (re-exported under its old name)
from reme_core.api import tags_ok as tags_ok


class VectorStoreError(RemeError):
    """A vector store refused an operation or its backend failed; the message says why."""


_GLOB_CHARS = re.compile(r"[*?\[]")
# Characters zvec's filter grammar cannot carry literally: quotes and backslashes (its escaping
# is inconsistent between = and LIKE) and LIKE's own wildcards. A literal holding one is cut
# short (wider) and the store post-filters; control characters would end the statement.
_UNSAFE = re.compile(r"[%_\\'\"\x00-\x1f]")


def unit_rows(vectors: np.ndarray, dim: int, what: str = "vector") -> np.ndarray:
    """Rows as float32 scaled to unit length; refuses a wrong shape, NaN, inf or a zero row."""
    arr = np.asarray(vectors, dtype=np.float32)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] != dim:
        raise VectorStoreError(f"{what} has shape {tuple(arr.shape)}, this store holds dim {dim}")
    if not np.all(np.isfinite(arr)):
        raise VectorStoreError(f"{what} contains NaN or infinity")
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise VectorStoreError(f"{what} is all zeros and has no direction to compare")
    return arr / norms


def safe_literal(value: str) -> bool:
    """True when ``value`` can sit inside a quoted zvec literal exactly as it is."""
    return _UNSAFE.search(value) is None


def quote(value: str) -> str:
    """A single-quoted zvec literal; callers check ``safe_literal`` first."""
    if not safe_literal(value):
        raise VectorStoreError(f"cannot quote {value!r} for a zvec filter")
    return f"'{value}'"


@dataclass(frozen=True)
class FilterPlan:
    """A zvec filter expression (None: no condition) and whether it is exactly the filter."""

    expression: str | None
    exact: bool
    empty: bool = False
    """True when nothing can match (no statuses): skip the query."""


def _path_condition(patterns: Sequence[str]) -> tuple[str | None, bool]:
    """OR of per-pattern conditions; None when some pattern cannot be narrowed at all."""
    parts: list[str] = []
    exact = True
    for raw in patterns:
        p = raw.replace("\\", "/").strip()
        while p.startswith("./"):
            p = p[2:]
        p = p.strip("/")
        if "\0" in p or ".." in p.split("/"):
            exact = False  # path_matches never lets such a pattern match: post-filter drops all
            continue
        if p == "":
            return None, True  # the whole workspace
        glob = _GLOB_CHARS.search(p)
        static = p if glob is None else p[: glob.start()]
        cut = _UNSAFE.search(static)
        if glob is None and cut is None:
            parts.append(f"path = {quote(p)}")
            parts.append(f"path LIKE {quote(p + '/')[:-1]}%'")
            continue
        exact = False
        prefix = static if cut is None else static[: cut.start()]
        if not prefix:
            return None, False
        parts.append(f"path LIKE {quote(prefix)[:-1]}%'")
    if not parts:
        return "path = ''", False  # nothing can match; the post-filter agrees
    return "(" + " OR ".join(parts) + ")", exact


def zvec_plan(filters: SearchFilters | None, encode_tag=None) -> FilterPlan:
    """Translate ``filters`` for zvec. ``encode_tag`` maps a stored tag to its stored literal."""
    if filters is None:
        return FilterPlan(None, True)
    if not filters.statuses:
        return FilterPlan(None, True, empty=True)
    if filters.since and filters.until and filters.since > filters.until:
        return FilterPlan(None, True, empty=True)
    conds: list[str] = []
    exact = True
    statuses = list(dict.fromkeys(filters.statuses))
    if all(safe_literal(s) for s in statuses):
        conds.append("status IN (" + ", ".join(quote(s) for s in statuses) + ")")
    else:
        exact = False
    if filters.since is not None:
        conds.append(f"date >= '{filters.since.isoformat()}'")
    if filters.until is not None:
        conds.append(f"date <= '{filters.until.isoformat()}'")
    wanted = query_tags(filters)
    if wanted:
        if any(not t for t in wanted):
            if filters.tag_mode == "all":
                return FilterPlan(None, True, empty=True)
            wanted = [t for t in wanted if t]
            if not wanted:
                return FilterPlan(None, True, empty=True)
        literals = [encode_tag(t) if encode_tag else t for t in wanted]
        if all(safe_literal(t) for t in literals):
            op = "CONTAIN_ALL" if filters.tag_mode == "all" else "CONTAIN_ANY"
            conds.append(f"tags {op} (" + ", ".join(quote(t) for t in literals) + ")")
        else:
            exact = False
    if filters.paths:
        cond, path_exact = _path_condition(filters.paths)
        exact = exact and path_exact
        if cond is not None:
            conds.append(cond)
    return FilterPlan(" AND ".join(conds) if conds else None, exact)


def encode_tag(tag: str) -> str:
    """A stored tag in a form safe for zvec literals: each unsafe character and ``~`` itself
    becomes ``~`` plus two hex digits, so the mapping stays one-to-one."""
    return re.sub(r"[~%_\\'\"\x00-\x1f]", lambda m: f"~{ord(m.group()):02x}", tag)
