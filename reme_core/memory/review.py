"""Memory summarize and the review queue (``memory.review: queue``).

``MemoryProposer`` does what ``MemoryApi.summarize`` does with the model's drafts, but queues
each new or rewritten record as a MEMORY proposal instead of writing it; ``MemoryReviewer``
verifies one again on approval (a record of the same scope and id, the one the proposal names)
under the scope's lock, and commits it as a memory change.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from reme_core.errors import WorkspaceError
from reme_core.memory import note
from reme_core.memory.layout import record_path
from reme_core.memory.models import MemoryScope, MemorySummary, SkippedDraft
from reme_core.memory.records import (
    check_current,
    new_record,
    record_fields,
    rewritten,
    same_content,
    superseded_copy,
)
from reme_core.memory.store import Loaded, MemoryStore, belongs
from reme_core.memory.summarize import ExtractedMemory
from reme_core.pipelines.locks import named_lock
from reme_core.review import Proposal, ReviewApi, Reviewer
from reme_core.workspace.notes import parse_note

if TYPE_CHECKING:
    from reme_core.runtime import Reme

MEMORY_PIPELINE = "memory_summarize"
"""The ``pipeline`` of memory summarize's proposals (verb MEMORY)."""


def _scope_fields(scope: MemoryScope) -> dict[str, str]:
    return {scope.key: scope.value}


class MemoryProposer:
    def __init__(self, reme: Reme, scope: MemoryScope, clock: Callable[[], dt.datetime]):
        self.api = ReviewApi(reme)
        self.scope = scope
        self.clock = clock
        self.run_id = uuid.uuid4().hex[:12]

    def summarize(
        self,
        drafts: list[ExtractedMemory],
        existing: dict[str, Loaded],
        by_content: dict[str, str],
        linked: list[str],
        result: MemorySummary,
    ) -> MemorySummary:
        scope = self.scope
        # Memories already waiting for review, or rejected there, are not proposed again.
        held = {
            same_content(str(p.payload.get("content", "")))
            for p in self.api.proposals(pipeline=MEMORY_PIPELINE)
            if p.status in ("pending", "rejected")
            and p.payload.get("scope") == _scope_fields(scope)
        }
        for draft in drafts:
            metadata = draft.metadata(scope.memory_type)
            target = existing.get(draft.refines) if draft.refines else None
            if draft.refines and target is None:
                result.warnings.append(
                    f"the model said a memory refines {draft.refines!r}, which is no "
                    f"{scope.describe()} memory; it was proposed as a new one"
                )
            key = same_content(draft.content)
            if key in held:
                result.warnings.append(
                    f"{draft.content[:60]!r} is already pending or was rejected in review"
                )
                continue
            try:
                if target is not None:
                    fields = record_fields(
                        scope,
                        draft.content,
                        draft.when_to_use or target.record.when_to_use,
                        {**target.record.metadata, **metadata},
                        [*target.record.sources, *linked],
                    )
                    text = rewritten(target, self.clock, **fields)
                    if text is None:
                        result.unchanged.append(target.record.memory_id)
                        continue
                    proposal = self._propose(
                        "update",
                        target.record.memory_id,
                        target.record.path,
                        text,
                        target,
                        draft,
                        fields["sources"],
                    )
                elif key in by_content:
                    result.unchanged.append(by_content[key])
                    continue
                else:
                    fields = record_fields(
                        scope, draft.content, draft.when_to_use, metadata, linked
                    )
                    memory_id, text = new_record(scope, self.clock(), **fields)
                    path = record_path(scope, memory_id)
                    proposal = self._propose(
                        "add", memory_id, path, text, None, draft, fields["sources"]
                    )
            except WorkspaceError as exc:  # a bad value
                result.skipped.append(SkippedDraft(content=draft.content, reason=str(exc)))
                continue
            held.add(key)
            result.proposals.append(proposal.id)
        return result

    def _propose(
        self,
        action: str,
        memory_id: str,
        path: str,
        text: str,
        current: Loaded | None,
        draft: ExtractedMemory,
        sources: list[str],
    ) -> Proposal:
        before = None
        if current is not None:
            before = (self.api.reme.root / current.record.path).read_text(encoding="utf-8")
        return self.api.propose(
            pipeline=MEMORY_PIPELINE,
            step=None,
            run_id=self.run_id,
            verb="MEMORY",
            target=path,
            content=text,
            before=before,
            base_hash=current.record.content_hash if current is not None else None,
            sources=sources,
            note=f"{action} {memory_id} ({self.scope.describe()}): {draft.content[:80]}",
            verdict=_checks(path, text, self.scope, memory_id),
            payload={
                "action": action,
                "memory_id": memory_id,
                "scope": _scope_fields(self.scope),
                "content": draft.content,
                # update: what approval keeps as the superseded statement (the record's text
                # then, which approval checks is still its text by base_hash).
                **({"before": before} if before is not None else {}),
            },
        )


def _checks(path: str, text: str, scope: MemoryScope, memory_id: str) -> list[str]:
    from reme_core.workspace.hashing import content_hash

    record = note.parse(path, text, content_hash(text.encode("utf-8")))
    if not belongs(record, scope) or record.memory_id != memory_id:
        raise WorkspaceError(f"{path} would not hold memory {memory_id} of {scope.describe()}")
    return ["a valid memory record", f"of {scope.describe()}, id {memory_id}"]


class MemoryReviewer(Reviewer):
    def _parts(self, proposal: Proposal) -> tuple[str, str, MemoryScope]:
        payload = proposal.payload
        try:
            scope = MemoryScope.of(**payload.get("scope", {}))
        except (TypeError, ValidationError, WorkspaceError) as exc:
            raise WorkspaceError(f"proposal {proposal.id} names no memory scope: {exc}") from None
        action, memory_id = payload.get("action"), payload.get("memory_id")
        if action not in ("add", "update") or not isinstance(memory_id, str):
            raise WorkspaceError(f"proposal {proposal.id} is not a memory add or update")
        return action, memory_id, scope

    def lock(self, reme: Any, proposal: Proposal) -> AbstractContextManager[Any]:
        _, _, scope = self._parts(proposal)
        # The lock memory calls hold (reme_core.memory.commits.changing).
        return named_lock(reme.state_dir, f"memory:{scope.memory_type}:{scope.value}")

    def check(self, reme: Any, proposal: Proposal, before: str | None) -> list[str]:
        action, memory_id, scope = self._parts(proposal)
        if action == "add" and proposal.target != record_path(scope, memory_id):
            raise WorkspaceError(f"{proposal.target} is not where memory {memory_id} belongs")
        if action == "update":
            if before is None or proposal.base_hash is None:
                raise WorkspaceError(f"memory {memory_id} ({proposal.target}) is gone")
            current = note.parse(proposal.target, before, proposal.base_hash)
            if not belongs(current, scope) or current.memory_id != memory_id:
                raise WorkspaceError(
                    f"{proposal.target} no longer holds memory {memory_id} of {scope.describe()}"
                )
            check_current(current)
        checks = _checks(proposal.target, proposal.content, scope, memory_id)
        return ["the record is as it was when proposed", *checks]

    def applied(self, reme: Any, proposal: Proposal, content_hash: str) -> None:
        # An approved update keeps the statement it replaced, as MemoryApi's updates do.
        action, memory_id, scope = self._parts(proposal)
        before = proposal.payload.get("before")
        if action != "update" or not isinstance(before, str) or proposal.base_hash is None:
            return
        old = note.parse(proposal.target, before, proposal.base_hash)
        new = note.parse(proposal.target, proposal.content, content_hash)
        if same_content(old.content) == same_content(new.content):
            return
        store = MemoryStore(reme)
        current = Loaded(old, parse_note(proposal.target, before).frontmatter, before)
        copy_id = store.free_version(scope, memory_id)
        today = dt.datetime.now(reme.settings.tzinfo()).date()
        store.create(scope, copy_id, superseded_copy(current, copy_id, proposal.target, today))

    def message(self, proposal: Proposal) -> str:
        action, _, scope = self._parts(proposal)
        verb = "ADD" if action == "add" else "UPDATE"
        # "reme memory ..." makes it a memory entry in `reme history`, as the memory API's own.
        return (
            f"reme memory review: approve {proposal.id} ({scope.describe()})\n\n"
            f"{verb} {proposal.target}"
        )
