"""The review queue page: proposals a pipeline made instead of writing (``review: queue``),
each with its diff and evidence, approved or rejected (with a reason) one by one or in bulk by
verb, through the ``review_*`` operations (approve needs admin, reject write)."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from reme_core.service.operations import OPERATIONS
from reme_core.studio.web import OpFailed, Page

VERBS = ("CREATE", "CORROBORATE", "REFINE", "CORRECT", "TAG", "MEMORY")
OPERATIONS_NEEDED = ("review_list", "review_show", "review_approve", "review_reject")
DONE = {"approve": "approved", "reject": "rejected"}


def available() -> bool:
    return all(name in OPERATIONS for name in OPERATIONS_NEEDED)


async def review_page(
    here: Page,
    verb: str = "",
    message: str = "",
    result: Any = None,
    error: OpFailed | None = None,
) -> Response:
    if not available():
        return here.render("review.html", available=False, listing=None, verb=verb)
    payload: dict[str, Any] = {"status": "pending"}
    if verb:
        payload["verb"] = verb
    listing = await here.op("review_list", **payload)
    return here.render(
        "review.html",
        error.status if error is not None else 200,
        available=True,
        error=error,
        listing=listing,
        verb=verb,
        verbs=VERBS,
        message=message,
        result=result,
    )


async def review_show(here: Page, proposal_id: str) -> Response:
    if not available():
        raise OpFailed(404, "NotFoundError", "this server has no review queue")
    found = await here.op("review_show", id=proposal_id)
    return here.render("_review_show.html", proposal=found)


async def decide(here: Page, action: str, ids: list[str], verb: str, reason: str) -> Response:
    """Approve or reject proposals by id, or every pending one of ``verb``; the queue again,
    with what was done and what was refused (stale, already decided) and why."""
    if not available():
        raise OpFailed(404, "NotFoundError", "this server has no review queue")
    payload: dict[str, Any] = {"ids": ids} if ids else {"verb": verb}
    if action == "reject":
        if not reason:  # the operation needs one: say so in words, not as a schema error
            refused = OpFailed(
                422, "ReasonNeeded", "rejecting needs a reason: say why the change is wrong"
            )
            return await review_page(here, verb, error=refused)
        payload["reason"] = reason
    try:
        result = await here.op(f"review_{action}", **payload)
    except OpFailed as exc:
        if exc.status in (401, 403) or exc.status >= 500:
            raise
        return await review_page(here, verb, error=exc)  # e.g. a rejection without a reason
    done, refused = len(result["succeeded"]), len(result["refused"])
    message = f"{DONE[action]} {done}" + (f", refused {refused}" if refused else "")
    return await review_page(here, "" if ids else verb, message=message, result=result)
