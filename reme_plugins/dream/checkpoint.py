"""What dream has consolidated: per daily note the content hash last extracted, a queue of
units not integrated yet (deferred by ``max_units``, failed and retryable, or proposed for review
and found stale), and the units whose proposal was rejected in review.

A note counts as done once its hash is recorded here, and that happens only in ``dream_finish``,
after every unit extracted from it was either integrated or put in the queue. So a note edited
later is extracted again, a failed unit is retried on the next run without asking the model to
extract it again, and a run that dies half way leaves its notes pending: nothing is lost.

With ``review: queue`` a unit whose change is proposed counts as handled, like an applied one:
its note is checkpointed, and the unit waits in the review queue, not here. A rejection is
recorded with the unit's source hashes, so the unit is not proposed again while its sources are
unchanged; a stale proposal puts the unit back in the queue, to be integrated again.

Kept as JSON under ``.reme/dream/`` and written atomically.
"""

from __future__ import annotations

import json
from collections.abc import Set
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from reme_core.api import atomic_write

from .units import DreamError, DreamUnit, UnitOutcome

FILE = Path("dream") / "checkpoint.json"


class NoteMark(BaseModel):
    hash: str
    at: str
    """When it was checkpointed (ISO time in the workspace's zone)."""


class QueuedUnit(BaseModel):
    unit: DreamUnit
    status: Literal["pending", "failed"]
    """``pending``: deferred by max_units; ``failed``: its integration failed (retryable)."""
    attempts: int = 0
    """Runs in which its integration failed."""
    reason: str | None = None
    """Why the last attempt failed."""
    since: str


class RejectedUnit(BaseModel):
    """A unit whose proposed change was rejected in review."""

    name: str
    source_hashes: dict[str, str]
    """Its sources as they were: changed sources make it a new question."""
    proposal: str
    reason: str
    at: str


class Checkpoint(BaseModel):
    version: Literal[1] = 1
    notes: dict[str, NoteMark] = Field(default_factory=dict)
    queue: list[QueuedUnit] = Field(default_factory=list)
    rejected: dict[str, RejectedUnit] = Field(default_factory=dict)
    """Unit id -> its rejection (``review: queue``)."""

    def rejection(self, unit: DreamUnit) -> RejectedUnit | None:
        """The unit's rejection, when its sources are as they were then."""
        found = self.rejected.get(unit.id)
        return found if found is not None and found.source_hashes == unit.source_hashes else None


def checkpoint_path(state_dir: Path) -> Path:
    return state_dir / FILE


def load_checkpoint(state_dir: Path) -> Checkpoint:
    """The stored checkpoint; an empty one when dream never ran here."""
    path = checkpoint_path(state_dir)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Checkpoint()
    except OSError as exc:
        raise DreamError(f"cannot read the dream checkpoint {path}: {exc.strerror}") from None
    try:
        return Checkpoint.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise DreamError(
            f"the dream checkpoint {path} is damaged ({first['msg']}); move it aside to "
            "consolidate every daily note again"
        ) from None


def save_checkpoint(state_dir: Path, checkpoint: Checkpoint) -> Path:
    path = checkpoint_path(state_dir)
    data = json.dumps(checkpoint.model_dump(mode="json"), indent=1, ensure_ascii=False)
    atomic_write(path, (data + "\n").encode("utf-8"))
    return path


def forget_notes(state_dir: Path, paths: Set[str]) -> bool:
    """Drop purged notes from the checkpoint: their marks, and the queued or rejected units
    drawn from them (a unit learned partly from a purged note is not integrated later).
    Returns whether the checkpoint changed."""
    path = checkpoint_path(state_dir)
    if not path.is_file():
        return False
    checkpoint = load_checkpoint(state_dir)
    kept = Checkpoint(
        notes={p: m for p, m in checkpoint.notes.items() if p not in paths},
        queue=[q for q in checkpoint.queue if not set(q.unit.sources) & paths],
        rejected={i: r for i, r in checkpoint.rejected.items() if not set(r.source_hashes) & paths},
    )
    if kept == checkpoint:
        return False
    save_checkpoint(state_dir, kept)
    return True


def record_run(
    checkpoint: Checkpoint,
    *,
    now: str,
    extracted: dict[str, str],
    outcomes: list[UnitOutcome],
    units: dict[str, DreamUnit],
    deferred: list[DreamUnit],
    stale: list[str],
) -> Checkpoint:
    """The checkpoint after a run: notes extracted, units done dropped, failures queued."""
    notes = dict(checkpoint.notes)
    for path, digest in extracted.items():
        notes[path] = NoteMark(hash=digest, at=now)
    queue = {q.unit.id: q for q in checkpoint.queue if q.unit.id not in set(stale)}
    for outcome in outcomes:
        if outcome.succeeded:
            queue.pop(outcome.unit, None)
            continue
        earlier = queue.get(outcome.unit)
        queue[outcome.unit] = QueuedUnit(
            unit=units[outcome.unit],
            status="failed",
            attempts=(earlier.attempts if earlier else 0) + 1,
            reason=outcome.reason,
            since=earlier.since if earlier else now,
        )
    decided = {o.unit for o in outcomes}
    # Units the run never got to (deferred by max_units, or no integrate step ran) wait.
    waiting = [*deferred, *(u for u in units.values() if u.id not in decided)]
    for unit in waiting:
        queue.setdefault(unit.id, QueuedUnit(unit=unit, status="pending", since=now))
    # A rejection whose source notes were extracted again since (changed) asks nothing any more.
    rejected = {
        unit_id: found
        for unit_id, found in checkpoint.rejected.items()
        if all(
            path not in notes or notes[path].hash == digest
            for path, digest in found.source_hashes.items()
        )
    }
    return Checkpoint(notes=notes, queue=list(queue.values()), rejected=rejected)


def record_rejection(
    checkpoint: Checkpoint, unit: DreamUnit, *, proposal: str, reason: str, now: str
) -> Checkpoint:
    """The checkpoint with ``unit`` rejected in review (and out of the queue)."""
    rejected = dict(checkpoint.rejected)
    rejected[unit.id] = RejectedUnit(
        name=unit.name,
        source_hashes=dict(unit.source_hashes),
        proposal=proposal,
        reason=reason,
        at=now,
    )
    queue = [q for q in checkpoint.queue if q.unit.id != unit.id]
    return checkpoint.model_copy(update={"rejected": rejected, "queue": queue})


def requeue(checkpoint: Checkpoint, unit: DreamUnit, *, reason: str, now: str) -> Checkpoint:
    """The checkpoint with ``unit`` waiting to be integrated again (its proposal went stale)."""
    if any(q.unit.id == unit.id for q in checkpoint.queue):
        return checkpoint
    queued = QueuedUnit(unit=unit, status="pending", reason=reason, since=now)
    rejected = {k: v for k, v in checkpoint.rejected.items() if k != unit.id}
    return checkpoint.model_copy(
        update={"queue": [*checkpoint.queue, queued], "rejected": rejected}
    )
