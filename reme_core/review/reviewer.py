"""``Reviewer``: how one kind of proposal is verified again on approval, and what the pipeline
that proposed it records when it is approved, rejected or found stale.

A step that proposes exposes one as its class attribute ``reviewer`` (``DreamIntegrate.reviewer``,
``AutoTagStep.reviewer``); the proposal names the step, so approval finds it through the plugin
registry. Memory summarize's proposals use the core's own (``reme_core.memory.review``).
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

from reme_core.review.models import Proposal

if TYPE_CHECKING:
    from reme_core.runtime import Reme


class Reviewer:
    """The default checks only that the target is as it was (the review API does that for every
    proposal before ``check``); subclasses verify the change itself."""

    def lock(self, reme: Reme, proposal: Proposal) -> AbstractContextManager[Any]:
        """Held while the proposal is checked, written and recorded (a pipeline's own lock)."""
        return nullcontext()

    def check(self, reme: Reme, proposal: Proposal, before: str | None) -> list[str]:
        """Verify ``proposal.content`` against the target's current text ``before`` (None: no
        such file); return the checks passed, or raise a RemeError saying why it fails."""
        return []

    def message(self, proposal: Proposal) -> str:
        """The history commit message of its approval (``reme history`` reads its kind from the
        subject: ``reme run ...`` is a run)."""
        return (
            f"reme run {proposal.pipeline} (review: approve {proposal.id})\n\n"
            f"{proposal.verb} {proposal.target}"
        )

    def applied(self, reme: Reme, proposal: Proposal, content_hash: str) -> None:
        """After the write: the pipeline's bookkeeping (a checkpoint that saw the new hash)."""

    def rejected(self, reme: Reme, proposal: Proposal) -> None:
        """Record the rejection so the same change is not proposed again."""

    def stale(self, reme: Reme, proposal: Proposal) -> None:
        """The target changed since: let the pipeline propose again on its next run."""
