"""The ``proactive`` step: daily notes changed since the cursor -> verified topic changes ->
``daily/_proactive.yaml`` and ``daily/_proactive.md`` (or one proposal, ``review: queue``).

Params (state): ``dry_run`` (ask and verify, write and advance nothing), ``today``
(``YYYY-MM-DD``: the day the note is written for). Outputs: ``pending`` (notes changed when the
run started), ``read`` (notes whose changes were taken), ``deferred`` (left for the next run by
``max_batches``), ``new``, ``resolved``, ``reopened``, ``mentioned``, ``snoozed`` (topic ids),
``open`` (topics to raise), ``written`` (paths), ``proposals``, ``waiting`` (a pending proposal
that holds the run back), ``failed`` (batches whose answer was rejected: nothing of them is
written, their notes are read again next time), ``checks``, ``problems``.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable, Set
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from reme_core.api import ComponentSettings, ReviewApi, Step, hookimpl, named_lock

from .cursor import FILE, forget_notes, load_cursor
from .forget import forget_in_topics
from .models import ProactiveParams, Rejected
from .reading import ask, batches, changed_notes, read_topics, shown_topics
from .review import ProactiveReviewer, propose
from .update import Changes, apply_answer, verify
from .writing import LOCK, advance, lock, note_text, now, today, write_note, write_topics

PROMPTS = ("reme_plugins", "proactive")


class ProactiveStep(Step):
    """Keep the open follow-up topics of the daily notes, and the note that raises them."""

    name: ClassVar[str] = "proactive"
    supports_review: ClassVar[bool] = True
    reviewer: ClassVar[ProactiveReviewer] = ProactiveReviewer()

    @classmethod
    def forget_paths(cls, state_dir: Path, paths: Set[str]) -> list[str]:
        """Purged notes leave the cursor's marks (``cursor.forget_notes``)."""
        with named_lock(state_dir, LOCK):
            return [FILE.as_posix()] if forget_notes(state_dir, paths) else []

    @classmethod
    def forget_in_workspace(
        cls, reme: Any, paths: Set[str], dry_run: bool = False
    ) -> dict[str, list[str]]:
        """Purged notes leave the topics and the note raising them (``forget``)."""
        return forget_in_topics(reme, paths, dry_run)

    class Settings(ComponentSettings):
        batch_tokens: int = Field(8000, ge=500, le=200_000)
        """Token budget of one call's notes (a longer note is shown cut to it)."""
        max_batches: int = Field(4, ge=1, le=100)
        """Calls per run at most; later notes wait for the next run."""
        retries: int = Field(1, ge=0, le=10)
        """Extra attempts at a batch after a rejected answer or a model error."""
        output_retries: int | None = Field(None, ge=0, le=10)
        """Retries of invalid structured output inside one call; None = the model's default."""
        max_raised: int = Field(10, ge=1, le=200)
        """Topics listed in daily/_proactive.md at most (the most recently mentioned)."""
        resolved_shown: int = Field(30, ge=0, le=1000)
        """Resolved topics shown to the model (the latest), so a re-mention can reopen one."""

    settings: Settings

    def run(self, run: Any, state: dict[str, Any]) -> dict[str, Any]:
        params = ProactiveParams.from_state(state)
        llm = run.require_llm("proactive")
        reme = run.reme
        day = params.today or today(reme)
        out: dict[str, Any] = {"read": [], "deferred": [], "failed": [], "written": []}
        out |= {"proposals": [], "waiting": None, "checks": []}
        with lock(reme):
            found = read_topics(reme)
            base = load_cursor(reme.state_dir).notes_for(found.hash)
            notes, out["problems"] = changed_notes(reme, base, dt.date.fromisoformat(day))
            out["pending"] = [n.path for n in notes]
            if run.review == "queue":
                waiting = ReviewApi(reme).proposals(pipeline=run.name, status="pending")
                if waiting:
                    out["waiting"] = waiting[0].id  # a second proposal would go stale with it
                    return {**out, **_ids(Changes()), "open": len(found.topics.to_raise(day))}
            topics, changes, read = found.topics, Changes(), {}
            groups = batches(notes, self.settings.batch_tokens)
            for batch in groups[: self.settings.max_batches]:
                try:
                    topics, done = self._batch(llm, run, topics, batch)
                except Rejected as exc:
                    out["failed"].append({"notes": [n.path for n in batch], "reason": str(exc)})
                    break  # later notes may build on these: they wait too
                _merge(changes, done)
                read |= {n.path: n.hash for n in batch}
            out["deferred"] = [n.path for n in notes if n.path not in read]
            out["read"] = sorted(read)
            out["checks"] = verify(found.topics, topics, read, _exists(reme)) if read else []
            result = {**out, **_ids(changes), "open": len(topics.to_raise(day))}
            if params.dry_run:
                return result
            if not changes.count():
                # Nothing to change (no notes, or notes with no follow-up in them): the notes
                # count as read, and only the note is brought up to date (a snooze fell due).
                if read:
                    advance(reme, found.hash, base, read)
                if run.review != "queue":
                    self._refresh_note(reme, topics, day, result)
                return result
            topics = topics.model_copy(update={"updated": now(reme)})
            note, note_hash = note_text(reme, topics, day, self.settings.max_raised)
            if run.review == "queue":
                proposal = propose(
                    reme,
                    run,
                    found,
                    topics,
                    changes,
                    note,
                    note_hash,
                    base,
                    read,
                    out["checks"],
                    day=day,
                    max_raised=self.settings.max_raised,
                )
                result["proposals"] = [proposal]
                return result
            new_hash = write_topics(reme, topics, found.hash)
            result["written"].append(topics.PATH)
            if write_note(reme, note, note_hash):
                result["written"].append(topics.NOTE_PATH)
            advance(reme, new_hash, base, read)
            for verb in changes.verbs(topics):
                run.record(verb)
        return result

    def _batch(self, llm: Any, run: Any, topics: Any, batch: list[Any]) -> tuple[Any, Changes]:
        """One call, applied and verified; Rejected after the last attempt."""
        reason = ""
        for _ in range(self.settings.retries + 1):
            try:
                answer = ask(
                    llm,
                    run.prompts(*PROMPTS),
                    shown_topics(topics, self.settings.resolved_shown),
                    batch,
                    budget=self.settings.batch_tokens,
                    retries=0,
                    output_retries=self.settings.output_retries,
                )
                after, changes = apply_answer(topics, answer)
                verify(topics, after, {n.path: n.hash for n in batch}, _exists(run.reme))
            except Rejected as exc:
                reason = str(exc)
                continue
            return after, changes
        raise Rejected(reason)

    def _refresh_note(self, reme: Any, topics: Any, day: str, result: dict[str, Any]) -> None:
        """No new notes: still rewrite the note when it is missing or out of date (a snoozed
        topic fell due, the topics file was edited by hand or reverted)."""
        if not topics.topics:
            return
        note, note_hash = note_text(reme, topics, day, self.settings.max_raised)
        if write_note(reme, note, note_hash):
            result["written"].append(topics.NOTE_PATH)


def _exists(reme: Any) -> Callable[[str], bool]:
    return lambda path: os.path.isfile(reme.root / path)


def _merge(into: Changes, more: Changes) -> None:
    for kind, ids in vars(more).items():
        target = getattr(into, kind)
        target.extend(i for i in ids if i not in target)


def _ids(changes: Changes) -> dict[str, list[str]]:
    return {kind: list(ids) for kind, ids in vars(changes).items()}


@hookimpl
def register_steps(register: Callable[[type[Step]], None]) -> None:
    register(ProactiveStep)
