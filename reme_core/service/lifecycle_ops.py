"""The lifecycle operations: forgetting notes (archived, or purged with confirmation) and
archiving the notes that expired. Both need the admin profile: a purge cannot be undone, and
either changes notes the caller did not write."""

from __future__ import annotations

import datetime as dt

from pydantic import Field, model_validator

from reme_core.runtime import Reme
from reme_core.service.forget import ForgetReport, archive, purge, resolve_targets
from reme_core.service.framework import Input, Operation
from reme_core.service.lifecycle import ExpireReport, archive_expired


class ForgetInput(Input):
    path: str | None = None
    """The note to forget (workspace-relative)."""
    query: str | None = Field(None, max_length=2000)
    """Instead of ``path``: the notes whose text holds the words of this query."""
    limit: int = Field(10, ge=1, le=50)
    """With ``query``: at most this many notes."""
    purge: bool = False
    """Remove the notes and every trace of them (not revertible) instead of archiving them."""
    confirm: bool = False
    """Needed by a purge (a dry run lists the notes first)."""
    with_digests: bool = False
    """With ``purge``: also remove the links to the notes from the digest notes citing them
    (a line holding only the link goes; other citing lines are kept and reported)."""
    keep_sources: bool = False
    """With ``purge``: keep a purged resource note's source file under ``resource/`` (it is
    listed as forgotten, so auto_resource does not note it again) instead of purging it too."""
    dry_run: bool = False
    """Only say which notes would be forgotten."""

    @model_validator(mode="after")
    def _one_target(self) -> ForgetInput:
        if (self.path is None) == (self.query is None):
            raise ValueError("give either path or query (not both)")
        if self.query is not None and not self.query.strip():
            raise ValueError("query is empty")
        if self.path is not None and not self.path.strip():
            raise ValueError("path is empty")
        if self.keep_sources and not self.purge:
            raise ValueError("keep_sources goes with purge (archiving keeps every file)")
        if self.with_digests and not self.purge:
            raise ValueError(
                "with_digests goes with purge (archiving leaves the digests as they are)"
            )
        return self


def _forget(reme: Reme, given: ForgetInput) -> ForgetReport:
    paths = resolve_targets(reme, given.path, given.query, given.limit)
    if given.purge:
        return purge(
            reme,
            paths,
            confirm=given.confirm,
            dry_run=given.dry_run,
            with_digests=given.with_digests,
            keep_sources=given.keep_sources,
        )
    return archive(reme, paths, dry_run=given.dry_run)


class ExpireInput(Input):
    dry_run: bool = False
    """Only list the notes that expired."""
    today: dt.date | None = None
    """Judge expiry as of this day (default: today in the workspace's zone)."""


def _expire(reme: Reme, given: ExpireInput) -> ExpireReport:
    return archive_expired(reme, today=given.today, dry_run=given.dry_run)


LIFECYCLE_OPERATIONS: list[Operation] = [
    Operation(
        "forget",
        "admin",
        "Forget a note (path) or the notes holding a query's words: archived by default "
        "(recorded in history, revertible); purge removes the note and every trace of it "
        "(chunks, vectors, links, tags, cached embeddings, proposals, history) and needs "
        "confirm; the report lists what was removed and what, if anything, still holds it.",
        ForgetInput,
        _forget,
        destructive=True,
    ),
    Operation(
        "expire",
        "admin",
        "Archive the notes whose expires: day has come, or whose folder's lifecycle.expire "
        "duration has passed (the scheduler's expire job), as one history entry.",
        ExpireInput,
        _expire,
    ),
]

__all__ = ["LIFECYCLE_OPERATIONS"]
