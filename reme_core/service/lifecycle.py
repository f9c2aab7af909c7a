"""The ``expire`` job: notes whose time has come become archived.

A note expires on its own ``expires:`` (a date, or a duration from ``created``: see
``reme_core.search.expiry``) or, when it names none, by its folder's ``lifecycle.expire``
duration counted from its ``created``/``date`` (else the file's modification day); in
``tool_results/`` (spilled tool outputs, not notes) the files older than that are deleted. Search
already leaves expired notes out; this job writes ``status: archived`` into them so the note
says so itself, in one history entry (``reme revert`` undoes it). Only active Markdown notes
change; an ``expires:`` that cannot be read is reported, never guessed.
"""

from __future__ import annotations

import datetime as dt

from pydantic import BaseModel, Field

from reme_core.light.tool_results import TOOL_RESULTS_DIR, SpillStore
from reme_core.pipelines.locks import named_lock
from reme_core.runtime import Reme
from reme_core.schema import NoteSummary
from reme_core.search.expiry import (
    expired_on,
    expiry_of,
    file_day,
    folder_expired,
    parse_duration,
    parse_expires,
    parse_policy,
)
from reme_core.workspace.history import HistoryError

LOCK = "expire"


class ExpireReport(BaseModel):
    today: dt.date
    dry_run: bool = False
    archived: dict[str, dt.date] = Field(default_factory=dict)
    """Note -> the day it expired (``expires:`` or its folder's policy)."""
    invalid: dict[str, str] = Field(default_factory=dict)
    """Notes whose ``expires:`` cannot be read, and why (left as they are)."""
    deleted: list[str] = Field(default_factory=list)
    """Spilled tool outputs (``tool_results/``: not notes, not indexed, kept out of history)
    older than that folder's policy, deleted as ``reme_core.light`` expires them."""
    history: str | None = None
    history_error: str | None = None


def due(reme: Reme, today: dt.date) -> tuple[dict[str, dt.date], dict[str, str]]:
    """(active notes expired by ``today`` -> their day, unreadable ``expires:`` -> why)."""
    expired: dict[str, dt.date] = {}
    invalid: dict[str, str] = {}
    for path, note in reme.catalog.expiring().items():
        try:
            parse_expires(note.frontmatter.get("expires"), f"{path}: expires")
        except ValueError as exc:
            invalid[path] = str(exc)
            continue
        when = expiry_of(note)
        if when is None:
            invalid[path] = f"{path}: expires is a duration but the note has no created or date"
        elif when <= today and _archivable(note):
            expired[path] = when
    # The same judgement search makes (``search.expiry.folder_expired``).
    policy = parse_policy(reme.settings.lifecycle.expire)
    modified = file_day(reme.root, reme.settings.tzinfo())
    for path, when in folder_expired(reme.catalog, today, policy, modified).items():
        expired.setdefault(path, when)
    return expired, invalid


def note_expired(reme: Reme, note: NoteSummary, today: dt.date) -> bool:
    """Whether ``note`` counts as archived on ``today`` by search's judgement, its ``expires``
    or its folder's ``lifecycle.expire`` (``search.expiry.expired_on``), before this job has
    written ``status: archived`` into it."""
    policy = parse_policy(reme.settings.lifecycle.expire)
    when = expired_on(note, policy, file_day(reme.root, reme.settings.tzinfo()))
    return when is not None and when <= today


def archive_expired(
    reme: Reme, today: dt.date | None = None, dry_run: bool = False
) -> ExpireReport:
    """Archive every note ``due`` today (the workspace's zone), as one history entry."""
    today = today or dt.datetime.now(reme.settings.tzinfo()).date()
    expired, invalid = due(reme, today)
    report = ExpireReport(today=today, dry_run=dry_run, archived=expired, invalid=invalid)
    spills = reme.settings.lifecycle.expire.get(f"{TOOL_RESULTS_DIR}/")
    if spills is not None and not dry_run:
        days = parse_duration(spills, f"{TOOL_RESULTS_DIR}/").days
        start = dt.datetime.combine(today, dt.time(), reme.settings.tzinfo()).timestamp()
        report.deleted = SpillStore(reme.paths).cleanup(days, now=start)
    if dry_run or not expired:
        return report
    with named_lock(reme.state_dir, LOCK), reme.history.batch():
        try:
            reme.history.snapshot()
        except HistoryError as exc:
            report.history_error = str(exc)
        for path in sorted(expired):
            reme.files.update_frontmatter(
                path, {"status": "archived", "archived_on": today.isoformat()}
            )
        if report.history_error is None:
            message = f"reme expire: archived {len(expired)} note(s)\n\n" + "\n".join(
                sorted(expired)
            )
            try:
                report.history = reme.history.record(message)
            except HistoryError as exc:
                report.history_error = str(exc)
    return report


def _archivable(note: NoteSummary) -> bool:
    return note.status == "active" and note.path.lower().endswith(".md")
