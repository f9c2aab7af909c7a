"""The history operations: the workspace's change history, one entry's diff and revert plan,
and reverting an entry."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from reme_core.errors import PathOutsideWorkspaceError
from reme_core.runtime import Reme
from reme_core.service.framework import Input, Operation
from reme_core.workspace.history_entries import never_reverts
from reme_core.workspace.paths import is_internal

RUN_ID = Field(pattern=r"^[0-9a-fA-F]{4,40}$", description="A history entry's id (`history`).")


class HistoryInput(Input):
    limit: int = Field(20, ge=1, le=500)
    path: str | None = None
    """Only the entries that changed this file (it may since have been deleted)."""


def _history(reme: Reme, given: HistoryInput) -> dict[str, Any]:
    path = None
    if given.path is not None:
        path = reme.paths.relative(given.path)
        if path == "" or is_internal(path):
            raise PathOutsideWorkspaceError(f"path {given.path!r} names no file of the workspace")
    return {"path": path, "entries": reme.history.entries(given.limit, path=path)}


class RunInput(Input):
    run: str = RUN_ID


def _history_show(reme: Reme, given: RunInput) -> dict[str, Any]:
    plan = reme.revert_preview(given.run)
    diff, truncated = reme.history.diff(given.run)
    return {
        "run": given.run,
        "plan": plan,
        "diff": diff,
        "truncated": truncated,
        "not_revertible": never_reverts(plan),
    }


class RevertInput(Input):
    run: str = RUN_ID
    dry_run: bool = False
    """Only say what the revert would delete, modify and restore."""
    confirm: bool = False
    """Needed when the revert deletes files (a dry run lists them first)."""
    force: bool = False
    """Needed to revert a snapshot of changes made outside reme (it undoes those edits)."""


def _revert(reme: Reme, given: RevertInput) -> dict[str, Any]:
    if given.dry_run:
        plan = reme.revert_preview(given.run)
        return {
            "run": given.run,
            "dry_run": True,
            "plan": plan,
            "not_revertible": never_reverts(plan),
        }
    files = reme.revert(given.run, force=given.force, confirm=given.confirm)
    return {"run": given.run, "dry_run": False, "files": files}


HISTORY_OPERATIONS: list[Operation] = [
    Operation(
        "history",
        "read",
        "The workspace's change history, newest first (the baseline, pipeline runs, each "
        "write, edit, move and delete, snapshots, reverts), or one file's.",
        HistoryInput,
        _history,
        read_only=True,
        idempotent=True,
    ),
    Operation(
        "history_show",
        "read",
        "One history entry: its diff and what reverting it would delete, modify, restore.",
        RunInput,
        _history_show,
        read_only=True,
        idempotent=True,
    ),
    Operation(
        "revert",
        "admin",
        "Undo one history entry as a new entry (dry_run previews; deleting files needs "
        "confirm, a snapshot force).",
        RevertInput,
        _revert,
        destructive=True,
    ),
]
