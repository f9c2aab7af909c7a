"""The review-queue operations: list and show the proposals of pipelines set to review, and
approve or reject them (recording who decided)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from reme_core.review.api import local_user
from reme_core.service.framework import Input, Operation
from reme_core.service.principal import current_principal

ProposalStatusFilter = Literal["pending", "approved", "rejected", "stale", "all"]
ProposalVerbName = Literal["CREATE", "CORROBORATE", "REFINE", "CORRECT", "TAG", "MEMORY"]
PROPOSAL_ID = Field(
    min_length=4, max_length=12, pattern=r"^[0-9a-fA-F]+$", description="A proposal id or prefix."
)


class ReviewListInput(Input):
    status: ProposalStatusFilter = "pending"
    verb: ProposalVerbName | None = None
    pipeline: str | None = Field(None, max_length=200)
    target: str | None = Field(None, max_length=1024)
    """Only proposals for this note (its workspace path, as proposals name it)."""
    limit: int | None = Field(None, ge=1, le=1000)


class ReviewIdInput(Input):
    id: str = PROPOSAL_ID


class ReviewSelection(Input):
    """Proposals by id, or every pending one of a verb and/or pipeline (not both ways)."""

    ids: list[str] = Field(default_factory=list, max_length=1000)
    verb: ProposalVerbName | None = None
    pipeline: str | None = Field(None, max_length=200)
    by: str | None = Field(None, max_length=200)
    """Who decides (recorded); default: the token's id over the server, else the local user."""

    @model_validator(mode="after")
    def _one_way(self) -> ReviewSelection:
        if self.ids and (self.verb is not None or self.pipeline is not None):
            raise ValueError("give ids, or verb/pipeline to select every pending one; not both")
        if not self.ids and self.verb is None and self.pipeline is None:
            raise ValueError("give ids, or verb/pipeline to select every pending one")
        return self


class ReviewRejectInput(ReviewSelection):
    reason: str = Field(min_length=1, max_length=2000)
    """Why the change is wrong: kept with the proposal, and what the pipeline remembers."""


def _decider(by: str | None) -> str:
    """``by``, with the calling token's id when served; the local user in-process."""
    principal = current_principal.get()
    if principal is None:
        return by or local_user()
    token = f"token:{principal.token_id}"
    return f"{by} ({token})" if by else token


REVIEW_OPERATIONS: list[Operation] = [
    Operation(
        "review_list",
        "read",
        "Proposals of pipelines set to review: queue (pending by default), oldest first.",
        ReviewListInput,
        lambda r, i: r.review.list(
            i.status, verb=i.verb, pipeline=i.pipeline, target=i.target, limit=i.limit
        ),
        read_only=True,
        idempotent=True,
    ),
    Operation(
        "review_show",
        "read",
        "One proposal in full: the diff, the proposed content, the verifier's checks, status.",
        ReviewIdInput,
        lambda r, i: r.review.show(i.id),
        read_only=True,
        idempotent=True,
    ),
    Operation(
        "review_approve",
        "admin",
        "Apply proposals (by id, or every pending one of a verb): each verified again against "
        "the current note, written, recorded in the history and indexed; stale ones refused.",
        ReviewSelection,
        lambda r, i: r.review.approve(i.ids, verb=i.verb, pipeline=i.pipeline, by=_decider(i.by)),
        destructive=True,
    ),
    Operation(
        "review_reject",
        "write",
        "Reject proposals with a reason; the pipeline does not propose the same change again.",
        ReviewRejectInput,
        lambda r, i: r.review.reject(
            i.ids, reason=i.reason, verb=i.verb, pipeline=i.pipeline, by=_decider(i.by)
        ),
    ),
]
"""Approving applies what a pipeline decided, with dream's power (admin); rejecting changes no
note, only what the pipeline will propose (write)."""
