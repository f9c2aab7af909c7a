"""The Follow-ups page: the open topics the proactive pipeline keeps (what the next session
raises), then the snoozed and resolved ones, each with the notes it came from; read through the
``proactive`` operation as the visitor, so a read token sees what ``GET /api/v1/proactive``
shows it."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from reme_core.studio.web import Studio, open_page

OPERATION = "proactive"


def _path(link: str) -> str:
    """``[[daily/2026-11-02/x]]`` -> ``daily/2026-11-02/x.md``."""
    target = link.removeprefix("[[").removesuffix("]]")
    return target if target.endswith(".md") else target + ".md"


def _view(topic: dict[str, Any]) -> dict[str, Any]:
    notes = [(_path(link), _path(link).removesuffix(".md")) for link in topic["notes"]]
    resolved = topic.get("resolved_by")
    return {**topic, "links": notes, "resolved_path": _path(resolved) if resolved else None}


def router(studio: Studio) -> APIRouter:
    pages = APIRouter(include_in_schema=False)

    @pages.get("/studio/proactive")
    async def proactive(request: Request) -> Response:
        here = await open_page(studio, request)
        if not here.has(OPERATION):
            return here.render("proactive.html", available=False)
        found = await here.op(OPERATION, state="all")
        raised_ids = {t["id"] for t in (await here.op(OPERATION))["topics"]}
        topics = [_view(t) for t in found["topics"]]
        raised = sorted(
            (t for t in topics if t["id"] in raised_ids),
            key=lambda t: (t["last_seen"], t["first_seen"]),
            reverse=True,
        )
        rest = [t for t in topics if t["id"] not in raised_ids]
        rest.sort(key=lambda t: t["last_seen"], reverse=True)
        return here.render("proactive.html", available=True, found=found, raised=raised, rest=rest)

    return pages
