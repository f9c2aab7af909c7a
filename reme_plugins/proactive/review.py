"""proactive and the review queue (``pipelines.proactive.review: queue``), through dream's path:
``ReviewApi.propose`` and a ``Reviewer`` the step names.

A run's whole change is one proposal. Its target is the note to raise (``daily/_proactive.md``,
a Markdown note the review queue can write); its payload holds the new topics file, the hash of
the file it was made from, and the notes read. Approval checks the topics file still has that
hash, verifies the change again with the run's own ``verify``, writes both files (one history
entry) and advances the cursor. A rejection advances the cursor without writing, so the same
notes are not proposed again until they change; a stale proposal leaves them to the next run.
"""

from __future__ import annotations

import os
from contextlib import AbstractContextManager
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from reme_core.api import ProactiveTopics, Proposal, RemeError, ReviewApi, Reviewer

from .cursor import load_cursor
from .reading import read_topics
from .update import Changes, verify
from .writing import advance, lock, write_topics


class Payload(BaseModel):
    topics: str
    """The proposed topics file's text."""
    topics_base: str | None
    """The topics file's hash when proposed (None: there was none)."""
    read: dict[str, str] = Field(default_factory=dict)
    day: str
    max_raised: int
    changes: dict[str, list[str]] = Field(default_factory=dict)


def propose(
    reme: Any,
    run: Any,
    found: Any,
    topics: ProactiveTopics,
    changes: Changes,
    note: str,
    note_hash: str | None,
    base: dict[str, str],
    read: dict[str, str],
    checks: list[str],
    *,
    day: str,
    max_raised: int,
) -> dict[str, Any]:
    """Queue the run's change; returns ``{id, status, reason}``."""
    _, absolute = reme.paths.resolve(ProactiveTopics.NOTE_PATH, for_write=True)
    before = absolute.read_text(encoding="utf-8") if note_hash is not None else None
    summary = ", ".join(f"{len(ids)} {kind}" for kind, ids in vars(changes).items() if ids)
    payload = Payload(
        topics=topics.dump(),
        topics_base=found.hash,
        read=read,
        day=day,
        max_raised=max_raised,
        changes={kind: list(ids) for kind, ids in vars(changes).items()},
    )
    proposal = ReviewApi(reme).propose(
        pipeline=run.name,
        step="proactive",
        run_id=run.id,
        verb="CREATE" if note_hash is None else "REFINE",
        target=ProactiveTopics.NOTE_PATH,
        content=note,
        before=before,
        base_hash=note_hash,
        sources=sorted(read),
        note=f"follow-ups: {summary or 'no change'}",
        verdict=checks,
        payload=payload.model_dump(mode="json"),
    )
    if proposal.status == "rejected":  # the same change was refused before: do not ask again
        advance(reme, found.hash, base, read)
    return {"id": proposal.id, "status": proposal.status, "reason": proposal.reason}


def _payload(proposal: Proposal) -> Payload:
    try:
        return Payload.model_validate(proposal.payload)
    except ValidationError as exc:
        raise RemeError(
            f"proposal {proposal.id} holds no proactive change: {exc.errors()[0]['msg']}"
        ) from None


class ProactiveReviewer(Reviewer):
    def lock(self, reme: Any, proposal: Proposal) -> AbstractContextManager[Any]:
        return lock(reme)

    def check(self, reme: Any, proposal: Proposal, before: str | None) -> list[str]:
        payload = _payload(proposal)
        current = read_topics(reme)
        if current.hash != payload.topics_base:
            raise RemeError(f"{ProactiveTopics.PATH} changed since the proposal")
        after = ProactiveTopics.parse(payload.topics)
        checks = verify(
            current.topics, after, payload.read, lambda p: os.path.isfile(reme.root / p)
        )
        if after.render_note(payload.day, payload.max_raised) != proposal.content:
            raise RemeError(f"the proposed {ProactiveTopics.NOTE_PATH} is not the topics' note")
        return [f"{ProactiveTopics.PATH} is as it was when proposed", *checks]

    def applied(self, reme: Any, proposal: Proposal, content_hash: str) -> None:
        payload = _payload(proposal)
        after = ProactiveTopics.parse(payload.topics)
        base = load_cursor(reme.state_dir).notes_for(payload.topics_base)
        new_hash = write_topics(reme, after, payload.topics_base)
        advance(reme, new_hash, base, payload.read)

    def message(self, proposal: Proposal) -> str:
        lines = [f"reme run {proposal.pipeline} (review: approve {proposal.id})", ""]
        lines += [f"{proposal.verb} {proposal.target}", f"WRITE {ProactiveTopics.PATH}"]
        payload = _payload(proposal)
        for kind, ids in payload.changes.items():
            lines += [f"{kind.upper()} {i}" for i in ids]
        return "\n".join(lines)

    def rejected(self, reme: Any, proposal: Proposal) -> None:
        payload = _payload(proposal)
        base = load_cursor(reme.state_dir).notes_for(payload.topics_base)
        advance(reme, read_topics(reme).hash, base, payload.read)
