"""The review queue's data: a proposal (one JSON file each) and the answers of the review calls."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, Field

from reme_core.errors import RemeError, WorkspaceError

ProposalVerb = Literal["CREATE", "CORROBORATE", "REFINE", "CORRECT", "TAG", "MEMORY"]
"""dream's four verbs, auto_tag's TAG, memory summarize's MEMORY."""
ProposalStatus = Literal["pending", "approved", "rejected", "stale"]
VERBS: tuple[str, ...] = ("CREATE", "CORROBORATE", "REFINE", "CORRECT", "TAG", "MEMORY")
STATUSES: tuple[str, ...] = ("pending", "approved", "rejected", "stale")

ID_LENGTH = 12
_ID = re.compile(r"^[0-9a-f]{4,12}$")
"""A proposal id, or a unique prefix of one (4 characters at least): never a path."""


class ReviewError(RemeError):
    """A proposal cannot be read, or the review call cannot be made as asked."""


def check_id(value: str) -> str:
    """``value`` as a proposal id or id prefix; WorkspaceError for anything else."""
    text = value.strip().lower()
    if not _ID.match(text):
        raise WorkspaceError(
            f"{value!r} is not a proposal id (4 to {ID_LENGTH} hex characters, as "
            "`reme review list` shows them)"
        )
    return text


class Proposal(BaseModel):
    """A change a pipeline wants to make, kept in ``.reme/proposals/<id>.json`` until decided."""

    version: Literal[1] = 1
    id: str
    pipeline: str
    """The pipeline (``dream``, ``auto_tag``) or ``memory_summarize`` that proposed it."""
    step: str | None = None
    """The registered step that proposed it; its ``reviewer`` re-verifies it on approval (None:
    a core proposal, memory summarize's)."""
    run_id: str
    """The run that proposed it (``PipelineResult.run_id``)."""
    created: str
    """ISO time in the workspace's zone."""
    verb: ProposalVerb
    target: str
    """The one note it changes (workspace path)."""
    sources: list[str] = Field(default_factory=list)
    """The notes it comes from (the evidence)."""
    note: str = ""
    """One line: why (the model's note, the tags added, the memory's action)."""
    diff: str
    """Unified diff of the target, from its content at proposal time to ``content``."""
    content: str
    """The target's full proposed text: exactly what approval writes."""
    content_hash: str
    base_hash: str | None
    """The target's content hash at proposal time; None for a new file (CREATE, a new memory).
    Approval refuses, as stale, a target that no longer has it."""
    verdict: list[str] = Field(default_factory=list)
    """The checks the verifier passed (again on approval: the ones that ran then)."""
    status: ProposalStatus = "pending"
    decided: str | None = None
    """When it was approved, rejected or found stale."""
    decided_by: str | None = None
    """Who decided: the name given (``--by``), the token's id over the server, else the local
    user; ``reme`` when an approval found it stale."""
    reason: str | None = None
    """Rejected: why (given by the reviewer). Stale: what changed."""
    history: str | None = None
    """Approved: the history commit that holds the change (``reme revert`` takes it)."""
    history_error: str | None = None
    payload: dict[str, Any] = Field(default_factory=dict)
    """What the proposing step needs to verify it again (dream: the unit and the decision)."""


class ProposalSummary(BaseModel):
    """A proposal in a list: everything but its text and payload."""

    id: str
    pipeline: str
    run_id: str
    created: str
    verb: ProposalVerb
    target: str
    sources: list[str]
    note: str
    status: ProposalStatus
    base_hash: str | None
    content_hash: str
    added_lines: int
    removed_lines: int
    decided: str | None = None
    decided_by: str | None = None
    reason: str | None = None
    history: str | None = None
    target_changed: bool | None = None
    """Pending only: whether the target's content differs from ``base_hash`` now (approval
    would find it stale). None for decided proposals."""
    base_kept_as: str | None = None
    """Pending only: the target was superseded since (``review.supersession``); the version the
    proposal was based on is now this copy, and approval refuses the proposal as stale."""
    superseded_by: str | None = None
    """Pending only: the target is itself a superseded copy; the note that replaced it."""


class ProposalView(Proposal):
    """One proposal in full, with the target's state now."""

    current_hash: str | None = None
    """The target's content hash now (None: no such file)."""
    target_changed: bool | None = None
    base_kept_as: str | None = None
    superseded_by: str | None = None


class ReviewList(BaseModel):
    proposals: list[ProposalSummary] = Field(default_factory=list)
    """Oldest first."""
    total: int = 0
    """How many matched before ``limit``."""
    counts: dict[str, int] = Field(default_factory=dict)
    """Proposals per status, over the whole queue (filters aside)."""
    problems: dict[str, str] = Field(default_factory=dict)
    """Proposal files that cannot be read, with the reason."""


class ReviewOutcome(BaseModel):
    """What one approve or reject did to one proposal."""

    id: str
    verb: ProposalVerb
    target: str
    pipeline: str
    status: ProposalStatus
    """Its status after the call."""
    reason: str | None = None
    """Refused: why; rejected: the reason given."""
    content_hash: str | None = None
    """Approved: the target's hash after the write."""
    verdict: list[str] = Field(default_factory=list)
    """Approved: the checks passed on approval."""
    history: str | None = None
    history_error: str | None = None


class ReviewResult(BaseModel):
    action: Literal["approve", "reject"]
    succeeded: list[ReviewOutcome] = Field(default_factory=list)
    """Approved (written, verified, indexed), or rejected."""
    refused: list[ReviewOutcome] = Field(default_factory=list)
    """Not done, with the reason: stale (the target changed, or the change no longer
    verifies), already decided, or its step is not loaded."""
