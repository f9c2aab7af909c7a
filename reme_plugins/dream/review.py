"""dream and the review queue (``pipelines.dream.review: queue``).

``propose`` turns a verified plan into a proposal (its unit and decision in the payload);
``DreamReviewer`` verifies it again on approval with the same verifier as a run (the decision
applied to the target's current text must give exactly the proposed content, and pass the verb's
contract), and keeps the checkpoint consistent: a rejected unit is recorded with its source
hashes and not proposed again while they are unchanged; a stale one goes back to the queue.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from reme_core.api import Proposal, ReviewApi, Reviewer, named_lock

from .checkpoint import (
    Checkpoint,
    load_checkpoint,
    record_rejection,
    requeue,
    save_checkpoint,
)
from .integrate import Plan, exists, verify_decision
from .supersede import keep_superseded
from .units import Decision, DecisionRejected, DreamError, DreamUnit
from .verify import check_target

LOCK = "dream"
"""The steps' lock (``steps.LOCK``): held while the checkpoint is read and written."""


def proposer(
    reme: Any, *, pipeline: str, step: str, run_id: str
) -> Callable[[Plan, DreamUnit], tuple[str, str, str | None]]:
    """The ``Integrator.propose`` callback of one run."""
    api = ReviewApi(reme)

    def propose(plan: Plan, unit: DreamUnit) -> tuple[str, str, str | None]:
        decision = plan.decision
        proposal = api.propose(
            pipeline=pipeline,
            step=step,
            run_id=run_id,
            verb=decision.verb,
            target=plan.target,
            content=plan.after,
            before=plan.before,
            base_hash=plan.before_hash,
            sources=unit.sources,
            note=decision.note or unit.summary,
            verdict=plan.checks,
            payload={
                "unit": unit.model_dump(mode="json"),
                "decision": decision.model_dump(mode="json"),
                # CORRECT: what approval keeps as the superseded copy (the target's text then,
                # which approval checks is still its text by base_hash).
                **({"before": plan.before} if decision.verb == "CORRECT" else {}),
            },
        )
        return proposal.id, proposal.status, proposal.reason

    return propose


def held_by_review(
    reme: Any, checkpoint: Checkpoint, pipeline: str
) -> Callable[[DreamUnit], str | None]:
    """``extract_units``'s ``reviewed``: why review already holds a unit (None: it does not)."""
    pending: dict[str, str] = {}
    for proposal in ReviewApi(reme).proposals(pipeline=pipeline, status="pending"):
        unit_id = (proposal.payload.get("unit") or {}).get("id")
        if isinstance(unit_id, str):
            pending.setdefault(unit_id, proposal.id)

    def reviewed(unit: DreamUnit) -> str | None:
        if unit.id in pending:
            return f"proposal {pending[unit.id]} waits for review"
        rejected = checkpoint.rejection(unit)
        if rejected is not None:
            return f"rejected in review (proposal {rejected.proposal}): {rejected.reason}"
        return None

    return reviewed


def _parts(proposal: Proposal) -> tuple[DreamUnit, Decision]:
    try:
        unit = DreamUnit.model_validate(proposal.payload.get("unit"))
        decision = Decision.model_validate(proposal.payload.get("decision"))
    except ValidationError as exc:
        raise DreamError(
            f"proposal {proposal.id} does not hold a dream unit and decision: "
            f"{exc.errors()[0]['msg']}"
        ) from None
    return unit, decision


class DreamReviewer(Reviewer):
    def check(self, reme: Any, proposal: Proposal, before: str | None) -> list[str]:
        unit, decision = _parts(proposal)
        if decision.verb != proposal.verb:
            raise DecisionRejected(
                f"the proposal says {proposal.verb}, its decision {decision.verb}"
            )
        target = check_target(decision, unit, [proposal.target], lambda p: exists(reme, p))
        if target != proposal.target:
            raise DecisionRejected(f"the decision's target is {target}, not {proposal.target}")
        after, checks = verify_decision(reme, decision, target, before, unit)
        if after != proposal.content:
            raise DecisionRejected(
                f"the decision applied to {target} as it is now no longer gives the proposed text"
            )
        return ["the target is as it was when proposed", *checks]

    def applied(self, reme: Any, proposal: Proposal, content_hash: str) -> None:
        # An approved CORRECT keeps the node as it was, as a run's CORRECT does (supersede.py).
        before = proposal.payload.get("before")
        if proposal.verb == "CORRECT" and isinstance(before, str):
            _, decision = _parts(proposal)
            keep_superseded(reme, proposal.target, before, decision.evidence)

    def rejected(self, reme: Any, proposal: Proposal) -> None:
        unit, _ = _parts(proposal)
        with named_lock(reme.state_dir, LOCK):
            checkpoint = record_rejection(
                load_checkpoint(reme.state_dir),
                unit,
                proposal=proposal.id,
                reason=proposal.reason or "",
                now=_now(reme),
            )
            save_checkpoint(reme.state_dir, checkpoint)

    def stale(self, reme: Any, proposal: Proposal) -> None:
        unit, _ = _parts(proposal)
        with named_lock(reme.state_dir, LOCK):
            checkpoint = requeue(
                load_checkpoint(reme.state_dir),
                unit,
                reason=f"proposal {proposal.id} went stale: {proposal.reason}",
                now=_now(reme),
            )
            save_checkpoint(reme.state_dir, checkpoint)


def _now(reme: Any) -> str:
    return dt.datetime.now(reme.settings.tzinfo()).isoformat(timespec="seconds")
