"""What dream has consolidated: per daily note the content hash last extracted, plus a queue of
units not integrated yet (deferred by ``max_units``, or failed and retryable).

A note counts as done once its hash is recorded here, and that happens only in ``dream_finish``,
after every unit extracted from it was either integrated or put in the queue. So a note edited
later is extracted again, a failed unit is retried on the next run without asking the model to
extract it again, and a run that dies half way leaves its notes pending: nothing is lost.

Kept as JSON under ``.reme/dream/`` and written atomically.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from reme_core.workspace.tools import atomic_write

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


class Checkpoint(BaseModel):
    version: Literal[1] = 1
    notes: dict[str, NoteMark] = Field(default_factory=dict)
    queue: list[QueuedUnit] = Field(default_factory=list)


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
    return Checkpoint(notes=notes, queue=list(queue.values()))
