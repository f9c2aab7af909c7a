"""The review queue: pipelines configured with ``review: queue`` propose changes to notes
instead of making them; a person approves (verified again, written, recorded, indexed) or
rejects (the reason kept, the change not proposed again). See ``api.ReviewApi``."""

from reme_core.review.api import ReviewApi, unified_diff
from reme_core.review.models import (
    Proposal,
    ProposalSummary,
    ProposalView,
    ReviewError,
    ReviewList,
    ReviewOutcome,
    ReviewResult,
)
from reme_core.review.reviewer import Reviewer

__all__ = [
    "Proposal",
    "ProposalSummary",
    "ProposalView",
    "ReviewApi",
    "ReviewError",
    "ReviewList",
    "ReviewOutcome",
    "ReviewResult",
    "Reviewer",
    "unified_diff",
]
