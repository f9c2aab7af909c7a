"""``expires:`` in a note's frontmatter: when a note stops being true, and which notes have.

A note may say ``expires: 2026-03-01`` (a date) or ``expires: 90d`` (days or weeks counted from
its ``created`` frontmatter date, else its ``date``: the frontmatter ``date`` or a ``YYYY-MM-DD``
in its path). From that day on search treats it as archived (left out unless ``archived`` is
among the statuses asked for), and the scheduler's ``expire`` job sets ``status: archived`` in
the note itself (``reme_core.service.lifecycle``). Expiry is by calendar day: comparing against
"today" each search is what lets a note expire without being written again.

A folder's policy (``lifecycle.expire``: ``{"sessions/": 90d}``) is judged the same way, by search
and by the job alike (``folder_expired``): an active Markdown note of that folder with no
``expires:`` of its own counts as archived once the duration has passed since its
``created``/``date`` (else the file's modification day), before the job has written it.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from reme_core.index.catalog import Catalog
from reme_core.schema import NoteSummary
from reme_core.workspace.notes import note_date

_DURATION = re.compile(r"^\s*(\d{1,5})\s*([dw])\s*$", re.IGNORECASE)
MAX_DAYS = 36_600
"""A duration longer than a century is a typo, not a policy."""


def parse_duration(value: Any, where: str = "expires") -> dt.timedelta:
    """``90d`` or ``12w`` as a timedelta; ValueError saying what is accepted otherwise."""
    found = _DURATION.match(str(value)) if isinstance(value, str) else None
    if found is None:
        raise ValueError(
            f"{where}: {value!r} is not a duration; write a number of days or weeks "
            "such as '90d' or '12w'"
        )
    days = int(found.group(1)) * (7 if found.group(2).lower() == "w" else 1)
    if not 1 <= days <= MAX_DAYS:
        raise ValueError(f"{where}: {value!r} must be between 1 day and {MAX_DAYS} days")
    return dt.timedelta(days=days)


def parse_expires(value: Any, where: str = "expires") -> dt.date | dt.timedelta:
    """A frontmatter ``expires`` value: a date (YAML date, datetime or ``YYYY-MM-DD`` text) or a
    duration; ValueError otherwise."""
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str) and _DURATION.match(value):
        return parse_duration(value, where)
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value.strip()[:10])
        except ValueError:
            pass
    raise ValueError(
        f"{where}: {value!r} is neither a date (2026-03-01) nor a duration from the note's "
        "creation (90d, 12w)"
    )


def base_date(note: NoteSummary) -> dt.date | None:
    """The day a duration counts from: ``created``, else the note's date."""
    return note_date("", note.frontmatter.get("created")) or note.date


def expiry_of(note: NoteSummary) -> dt.date | None:
    """The first day ``note`` counts as expired; None when it names no (usable) expiry.

    A malformed ``expires`` never hides a note: it is reported by the ``expire`` job instead."""
    raw = note.frontmatter.get("expires")
    if raw is None or raw == "":
        return None
    try:
        when = parse_expires(raw)
    except ValueError:
        return None
    if isinstance(when, dt.date):
        return when
    start = base_date(note)
    return None if start is None else start + when


Policy = Mapping[str, dt.timedelta]
"""Folder (``sessions/``) -> how long its notes stay current (``lifecycle.expire``, parsed)."""
Modified = Callable[[str], "dt.date | None"]
"""A note's path -> the day its file was last modified (None: unknown)."""


def file_day(root: Path, tz: dt.tzinfo) -> Modified:
    """The day each file under ``root`` was last modified, in ``tz`` (None: unreadable)."""

    def modified(path: str) -> dt.date | None:
        try:
            stamp = (root / path).stat().st_mtime
        except OSError:
            return None
        return dt.datetime.fromtimestamp(stamp, tz).date()

    return modified


def parse_policy(policy: Mapping[str, str]) -> dict[str, dt.timedelta]:
    """``lifecycle.expire`` as durations (validated by the settings already)."""
    return {folder: parse_duration(after, folder) for folder, after in policy.items()}


def policy_archivable(note: NoteSummary) -> bool:
    """What a folder's policy applies to: active Markdown notes naming no ``expires:``."""
    return (
        note.status == "active"
        and note.path.lower().endswith(".md")
        and "expires" not in note.frontmatter
    )


def policy_expiry(
    note: NoteSummary, policy: Policy, modified: Modified | None = None
) -> dt.date | None:
    """The first day ``note`` is past its folder's ``policy`` (the most specific folder wins:
    ``sessions/`` < ``sessions/keep/``); None when no policy applies or nothing dates it."""
    folders = [f for f in policy if note.path.startswith(f)]
    if not folders or not policy_archivable(note):
        return None
    start = base_date(note) or (modified(note.path) if modified is not None else None)
    return None if start is None else start + policy[max(folders, key=len)]


def expired_on(
    note: NoteSummary, policy: Policy | None = None, modified: Modified | None = None
) -> dt.date | None:
    """The first day ``note`` counts as archived: its own ``expires``, else its folder's
    ``policy``; None when neither applies."""
    return expiry_of(note) or (policy_expiry(note, policy, modified) if policy else None)


def folder_expired(
    catalog: Catalog,
    today: dt.date,
    policy: Policy,
    modified: Modified | None = None,
    paths: Iterable[str] | None = None,
) -> dict[str, dt.date]:
    """The notes (of ``paths`` only, when given) past their folder's policy -> the day they
    expired (``policy_expiry``)."""
    if not policy:
        return {}
    pool = catalog.paths() if paths is None else set(paths)
    inside = [p for p in pool if any(p.startswith(f) for f in policy)]
    out: dict[str, dt.date] = {}
    for path, note in catalog.notes(inside).items():
        when = policy_expiry(note, policy, modified)
        if when is not None and when <= today:
            out[path] = when
    return out


def expired_paths(
    catalog: Catalog,
    today: dt.date,
    paths: Iterable[str] | None = None,
    policy: Policy | None = None,
    modified: Modified | None = None,
) -> set[str]:
    """The notes (of ``paths`` only, when given) whose ``expires`` day is today or earlier, or
    that are past their folder's ``policy``."""
    paths = None if paths is None else set(paths)
    out = set()
    for path, note in catalog.expiring(paths).items():
        when = expiry_of(note)
        if when is not None and when <= today:
            out.add(path)
    if policy:
        out.update(folder_expired(catalog, today, policy, modified, paths))
    return out
