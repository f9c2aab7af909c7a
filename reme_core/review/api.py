"""``ReviewApi``: the review queue of one open workspace (``reme.review``).

    reme.review.list()                              # pending proposals, oldest first
    reme.review.show("3f9a1c")                      # one in full: diff, content, verdict
    reme.review.approve(["3f9a1c"])                 # verify again, write, record, index
    reme.review.approve(verb="CORROBORATE")         # every pending CORROBORATE, one by one
    reme.review.reject(["3f9a1c"], reason="not a preference, a one-off")

Pipelines configured with ``review: queue`` call ``propose`` instead of writing. Approval reads
the target again: a target whose content hash is no longer the proposal's ``base_hash`` (or that
exists now, for a new file) makes the proposal ``stale`` and nothing is written; otherwise the
proposing step's reviewer verifies the change again (dream's verb contract, auto_tag's
tags-only rule), the file is written with ``expected_hash`` / ``create_only`` (a change racing
the approval is a conflict, also stale), indexed, and committed to the history as a run would.
"""

from __future__ import annotations

import datetime as dt
import difflib
import getpass
import uuid
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from reme_core.errors import ConflictError, RemeError, UnknownComponentError, WorkspaceError
from reme_core.pipelines.locks import named_lock
from reme_core.review.models import (
    ID_LENGTH,
    STATUSES,
    Proposal,
    ProposalSummary,
    ProposalView,
    ReviewError,
    ReviewList,
    ReviewOutcome,
    ReviewResult,
)
from reme_core.review.reviewer import Reviewer
from reme_core.review.store import ProposalStore
from reme_core.review.supersession import kept_since, replaced_by
from reme_core.workspace.hashing import content_hash
from reme_core.workspace.history import HistoryError

if TYPE_CHECKING:
    from reme_core.runtime import Reme

LOCK = "review"
"""Held while one proposal is decided, so two approvals of it cannot both write."""


def unified_diff(target: str, before: str | None, after: str) -> str:
    """``before`` -> ``after`` as a unified diff of ``target`` (``/dev/null`` for a new file)."""
    lines = difflib.unified_diff(
        _lines(before or ""),
        _lines(after),
        fromfile="/dev/null" if before is None else f"a/{target}",
        tofile=f"b/{target}",
    )
    return "".join(lines)


def _lines(text: str) -> list[str]:
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += "\n\\ No newline at end of file\n"
    return lines


def diff_counts(diff: str) -> tuple[int, int]:
    """Lines added and removed by a unified diff."""
    added = removed = 0
    for line in diff.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed


def local_user() -> str:
    try:
        return f"local:{getpass.getuser()}"
    except (KeyError, OSError):  # no user name in a bare container
        return "local"


class ReviewApi:
    def __init__(self, reme: Reme):
        self.reme = reme
        self.store = ProposalStore(reme.state_dir)

    # -- proposing ---------------------------------------------------------------------------

    def propose(
        self,
        *,
        pipeline: str,
        step: str | None,
        run_id: str,
        verb: str,
        target: str,
        content: str,
        before: str | None,
        base_hash: str | None,
        sources: Sequence[str] = (),
        note: str = "",
        verdict: Sequence[str] = (),
        payload: dict[str, Any] | None = None,
    ) -> Proposal:
        """Queue a verified change for review; returns the proposal.

        The same change (target, base hash and content) already pending comes back instead of a
        copy, and one already rejected comes back rejected: a change refused once is not asked
        about again while its target is as it was.
        """
        after_hash = content_hash(content.encode("utf-8"))
        existing, _ = self.store.all()
        for found in existing:
            if (
                found.status in ("pending", "rejected")
                and found.target == target
                and found.base_hash == base_hash
                and found.content_hash == after_hash
            ):
                return found
        proposal = Proposal(
            id=uuid.uuid4().hex[:ID_LENGTH],
            pipeline=pipeline,
            step=step,
            run_id=run_id,
            created=self._now("microseconds"),  # orders proposals made in one second
            verb=verb,  # type: ignore[arg-type]  # validated by the model
            target=target,
            sources=list(sources),
            note=note,
            diff=unified_diff(target, before, content),
            content=content,
            content_hash=after_hash,
            base_hash=base_hash,
            verdict=list(verdict),
            payload=payload or {},
        )
        self.store.save(proposal)
        return proposal

    def proposals(
        self, *, pipeline: str | None = None, status: str | None = None
    ) -> list[Proposal]:
        """Every readable proposal (in full), oldest first, optionally of one pipeline/status."""
        found, _ = self.store.all()
        return [
            p
            for p in found
            if (pipeline is None or p.pipeline == pipeline)
            and (status is None or p.status == status)
        ]

    # -- reading -----------------------------------------------------------------------------

    def list(
        self,
        status: str = "pending",
        *,
        verb: str | None = None,
        pipeline: str | None = None,
        target: str | None = None,
        limit: int | None = None,
    ) -> ReviewList:
        """Proposals with ``status`` (``all`` for every one), oldest first."""
        if status != "all" and status not in STATUSES:
            raise WorkspaceError(f"status must be one of {', '.join(STATUSES)} or all")
        found, problems = self.store.all()
        counts = dict.fromkeys(STATUSES, 0)
        for proposal in found:
            counts[proposal.status] += 1
        kept = [
            p
            for p in found
            if (status == "all" or p.status == status)
            and (verb is None or p.verb == verb)
            and (pipeline is None or p.pipeline == pipeline)
            and (target is None or p.target == target)
        ]
        hashes: dict[str, str | None] = {}
        summaries = []
        for proposal in kept[:limit] if limit is not None else kept:
            changed = None
            if proposal.status == "pending":
                if proposal.target not in hashes:
                    hashes[proposal.target] = self._current(proposal.target)[1]
                changed = hashes[proposal.target] != proposal.base_hash
            summaries.append(_summary(proposal, changed, **self._supersession(proposal, changed)))
        return ReviewList(proposals=summaries, total=len(kept), counts=counts, problems=problems)

    def show(self, proposal_id: str) -> ProposalView:
        proposal = self.store.load(proposal_id)
        _, current = self._current(proposal.target)
        changed = current != proposal.base_hash if proposal.status == "pending" else None
        return ProposalView(
            **proposal.model_dump(),
            current_hash=current,
            target_changed=changed,
            **self._supersession(proposal, changed),
        )

    def _kept(self, proposal: Proposal) -> str | None:
        return kept_since(
            self.reme.catalog, proposal.target, proposal.diff, lambda rel: self._current(rel)[0]
        )

    def _supersession(self, proposal: Proposal, changed: bool | None) -> dict[str, str | None]:
        """A pending proposal's target superseded since, or itself superseded."""
        if proposal.status != "pending":
            return {}
        catalog = self.reme.catalog
        kept = self._kept(proposal) if changed else None
        return {"base_kept_as": kept, "superseded_by": replaced_by(catalog, proposal.target)}

    # -- deciding ----------------------------------------------------------------------------

    def approve(
        self,
        ids: Sequence[str] = (),
        *,
        verb: str | None = None,
        pipeline: str | None = None,
        by: str | None = None,
    ) -> ReviewResult:
        """Apply proposals: by id, or every pending one of a ``verb`` and/or ``pipeline``. Each
        is verified and written on its own; the result says which succeeded and why the others
        were refused."""
        result = ReviewResult(action="approve")
        who = by or local_user()
        for proposal_id in self._select(ids, verb, pipeline):
            outcome, done = self._approve(proposal_id, who)
            (result.succeeded if done else result.refused).append(outcome)
        return result

    def reject(
        self,
        ids: Sequence[str] = (),
        *,
        reason: str,
        verb: str | None = None,
        pipeline: str | None = None,
        by: str | None = None,
    ) -> ReviewResult:
        """Mark pending proposals rejected with ``reason``; their pipeline records it, so the
        same change is not proposed again while its sources and target are unchanged."""
        reason = " ".join((reason or "").split())
        if not reason:
            raise WorkspaceError("a rejection needs a reason: say why the change is wrong")
        result = ReviewResult(action="reject")
        who = by or local_user()
        for proposal_id in self._select(ids, verb, pipeline):
            outcome, done = self._reject(proposal_id, reason, who)
            (result.succeeded if done else result.refused).append(outcome)
        return result

    # -- internals ---------------------------------------------------------------------------

    def _select(self, ids: Sequence[str], verb: str | None, pipeline: str | None) -> list[str]:
        if ids and (verb is not None or pipeline is not None):
            raise WorkspaceError("name proposals by id, or select them by verb/pipeline; not both")
        if ids:
            # Every id is checked before anything is decided: a typo changes nothing.
            return list(dict.fromkeys(self.store.load(i).id for i in ids))
        if verb is None and pipeline is None:
            raise WorkspaceError(
                "name the proposals: ids, or a verb and/or pipeline for every pending one"
            )
        found, _ = self.store.all()
        return [
            p.id
            for p in found
            if p.status == "pending"
            and (verb is None or p.verb == verb)
            and (pipeline is None or p.pipeline == pipeline)
        ]

    def _approve(self, proposal_id: str, who: str) -> tuple[ReviewOutcome, bool]:
        with named_lock(self.reme.state_dir, LOCK):
            proposal = self.store.load(proposal_id)  # again, under the lock
            if proposal.status != "pending":
                return _outcome(proposal, reason=f"already {proposal.status}"), False
            try:
                reviewer = self._reviewer(proposal)
            except ReviewError as exc:
                return _outcome(proposal, reason=str(exc)), False
            # The approval's own commit holds its write (history.batch).
            with self._reviewer_lock(reviewer, proposal), self.reme.history.batch():
                outcome = self._apply(proposal, reviewer, who)
            return outcome, outcome.status == "approved"

    def _apply(self, proposal: Proposal, reviewer: Reviewer, who: str) -> ReviewOutcome:
        before, current = self._current(proposal.target)
        if current != proposal.base_hash:
            what = "was created since" if proposal.base_hash is None else "changed since"
            if proposal.base_hash is not None and current is None:
                what = "was deleted since"
            kept = self._kept(proposal)
            if kept is not None and current is not None:
                what = f"was superseded since (the version proposed against is kept as {kept})"
            return self._stale(proposal, reviewer, f"{proposal.target} {what} the proposal")
        try:
            verdict = reviewer.check(self.reme, proposal, before)
        except RemeError as exc:
            return self._stale(proposal, reviewer, f"it no longer verifies: {exc}")
        history_error = self._snapshot()
        try:
            written = self.reme.files.write(
                proposal.target,
                proposal.content,
                expected_hash=proposal.base_hash,
                create_only=proposal.base_hash is None,
            )
        except ConflictError as exc:  # changed between the read and the write
            return self._stale(proposal, reviewer, str(exc))
        except WorkspaceError as exc:
            return _outcome(proposal, reason=f"cannot write {proposal.target}: {exc}")
        notes: list[str] = []
        try:
            reviewer.applied(self.reme, proposal, written.content_hash)
        except RemeError as exc:
            notes.append(f"written, but {proposal.pipeline}'s bookkeeping failed: {exc}")
        history = None
        if history_error is None:
            try:
                history = self.reme.history.record(reviewer.message(proposal))
            except HistoryError as exc:
                history_error = str(exc)
        proposal.status = "approved"
        proposal.decided, proposal.decided_by = self._now(), who
        proposal.history, proposal.history_error = history, history_error
        proposal.verdict = verdict or proposal.verdict
        self.store.save(proposal)
        return _outcome(
            proposal,
            reason="; ".join(notes) or None,
            content_hash=written.content_hash,
            verdict=proposal.verdict,
        )

    def _stale(self, proposal: Proposal, reviewer: Reviewer, reason: str) -> ReviewOutcome:
        """Nothing written: the proposal is stale and its pipeline may propose again."""
        proposal.status = "stale"
        proposal.decided, proposal.decided_by = self._now(), "reme"
        proposal.reason = reason
        self.store.save(proposal)
        try:
            reviewer.stale(self.reme, proposal)
        except RemeError as exc:
            reason = f"{reason} ({proposal.pipeline} could not queue it again: {exc})"
        return _outcome(proposal, reason=reason)

    def _reject(self, proposal_id: str, reason: str, who: str) -> tuple[ReviewOutcome, bool]:
        with named_lock(self.reme.state_dir, LOCK):
            proposal = self.store.load(proposal_id)
            if proposal.status != "pending":
                return _outcome(proposal, reason=f"already {proposal.status}"), False
            try:
                reviewer = self._reviewer(proposal)
                proposal.status = "rejected"
                proposal.reason = reason
                proposal.decided, proposal.decided_by = self._now(), who
                with self._reviewer_lock(reviewer, proposal):
                    reviewer.rejected(self.reme, proposal)
            except RemeError as exc:
                # Not recorded by its pipeline: it stays pending rather than come back later.
                why = f"cannot record the rejection: {exc}"
                return _outcome(self.store.load(proposal.id), reason=why), False
            self.store.save(proposal)
            return _outcome(proposal, reason=reason), True

    def _reviewer(self, proposal: Proposal) -> Reviewer:
        if proposal.step is None:
            found = self.reme.builtin_reviewer(proposal.pipeline)
            if found is None:
                raise ReviewError(f"no reviewer for {proposal.pipeline!r} proposals")
            return found
        try:
            cls = self.reme.plugins.get("step", proposal.step)
        except UnknownComponentError:
            raise ReviewError(
                f"proposal {proposal.id} was made by step {proposal.step!r}, which is not "
                "loaded: it cannot be verified (load its plugin, or reject it)"
            ) from None
        reviewer = getattr(cls, "reviewer", None)
        if not isinstance(reviewer, Reviewer):
            raise ReviewError(f"step {proposal.step!r} has no reviewer to verify its proposals")
        return reviewer

    def _reviewer_lock(self, reviewer: Reviewer, proposal: Proposal) -> AbstractContextManager[Any]:
        return reviewer.lock(self.reme, proposal)

    def _current(self, target: str) -> tuple[str | None, str | None]:
        """The target's text and content hash now (None, None: no such file)."""
        try:
            _, absolute = self.reme.paths.resolve(target, for_write=True)
        except WorkspaceError:
            return None, None
        try:
            data = absolute.read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None, None
        except OSError:
            return None, "unreadable"
        try:
            return data.decode("utf-8"), content_hash(data)
        except UnicodeDecodeError:
            return None, content_hash(data)

    def _snapshot(self) -> str | None:
        """Commit what changed since the last commit, so the approval's commit holds only its
        own change (as before a run); an error message instead of raising."""
        try:
            self.reme.history.snapshot()
        except HistoryError as exc:
            return str(exc)
        return None

    def _now(self, timespec: str = "seconds") -> str:
        zone = self.reme.settings.tzinfo()
        return dt.datetime.now(zone).isoformat(timespec=timespec)


def _summary(proposal: Proposal, changed: bool | None, **supersession: Any) -> ProposalSummary:
    added, removed = diff_counts(proposal.diff)
    data = proposal.model_dump(include=set(ProposalSummary.model_fields))
    return ProposalSummary(
        **data, added_lines=added, removed_lines=removed, target_changed=changed, **supersession
    )


def _outcome(proposal: Proposal, **fields: Any) -> ReviewOutcome:
    return ReviewOutcome(
        id=proposal.id,
        verb=proposal.verb,
        target=proposal.target,
        pipeline=proposal.pipeline,
        status=proposal.status,
        history=proposal.history,
        history_error=proposal.history_error,
        **fields,
    )
