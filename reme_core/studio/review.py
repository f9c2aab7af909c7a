"""The review queue page: proposals a pipeline made instead of writing (``review: queue``),
each with its diff and evidence, approved or rejected (with a reason) one by one or in bulk by
verb, through the ``review_*`` operations."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from reme_core.service.operations import OPERATIONS
from reme_core.studio.web import OpFailed, Page

VERBS = ("CREATE", "CORROBORATE", "REFINE", "CORRECT", "TAG", "MEMORY")
OPERATIONS_NEEDED = ("review_list", "review_show", "review_approve", "review_reject")


def available() -> bool:
    return all(name in OPERATIONS for name in OPERATIONS_NEEDED)


def _fields(operation: str) -> set[str]:
    return set(OPERATIONS[operation].input_model.model_fields)


def _ids(operation: str, ids: list[str]) -> dict[str, Any]:
    fields = _fields(operation)
    if "ids" in fields:
        return {"ids": ids}
    return {"id": ids[0]}


async def review_page(
    here: Page, verb: str = "", message: str = "", result: Any = None
) -> Response:
    if not available():
        return here.render("review.html", available=False, listing=None, verb=verb)
    payload: dict[str, Any] = {"status": "pending"}
    if verb and "verb" in _fields("review_list"):
        payload["verb"] = verb
    listing = await here.op("review_list", **payload)
    return here.render(
        "review.html",
        available=True,
        listing=listing,
        verb=verb,
        verbs=VERBS,
        message=message,
        result=result,
    )


async def review_show(here: Page, proposal_id: str) -> Response:
    if not available():
        raise OpFailed(404, "NotFoundError", "this server has no review queue")
    found = await here.op("review_show", **_id_payload(proposal_id))
    return here.render("_review_show.html", proposal=found)


def _id_payload(proposal_id: str) -> dict[str, Any]:
    fields = _fields("review_show")
    key = "id" if "id" in fields else ("proposal_id" if "proposal_id" in fields else "ids")
    return {key: [proposal_id] if key == "ids" else proposal_id}


async def decide(here: Page, action: str, ids: list[str], verb: str, reason: str) -> Response:
    """Approve or reject proposals by id, or every pending one of ``verb``."""
    if not available():
        raise OpFailed(404, "NotFoundError", "this server has no review queue")
    operation = f"review_{action}"
    payload: dict[str, Any] = _ids(operation, ids) if ids else {"verb": verb}
    if action == "reject":
        payload["reason"] = reason
    result = await here.op(operation, **payload)
    done = len(result.get("succeeded", [])) if isinstance(result, dict) else 0
    refused = len(result.get("refused", [])) if isinstance(result, dict) else 0
    message = f"{action}d {done}" + (f", refused {refused}" if refused else "")
    return await review_page(here, verb if not ids else "", message=message, result=result)
