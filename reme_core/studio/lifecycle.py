"""Forgetting and expiry in the studio: a note's Forget (archived, revertible through History) and
Purge (the note and every trace of it, after the visitor types its path), the same by query
(``/studio/forget?query=``: the notes holding its words listed by a dry run, then forgotten or,
after the visitor types the query, purged), the banners a note page shows (expires, expired,
archived, superseded by), and the Status page's list of notes expired or expiring soon (the
``expire`` operation's dry run).

A purge whose dry run lists a resource note's source file (``purged_with``: it would go with the
note) offers to keep that file instead (the operation's ``keep_sources``, as ``reme forget --purge
--keep-source``): it stays under ``resource/``, listed as forgotten, and the report says so.

A forget by query sends back the list it showed: when the query now matches other notes (one
written or changed meanwhile) nothing is changed and the new list is shown to confirm again.

Forget, purge and expire are admin operations: the buttons are shown to an admin token only, and
the dispatcher refuses anyone else whatever the browser sends. A purge that was not confirmed
gets the operation's own refusal (409, nothing changed) and the confirm step again.
"""

from __future__ import annotations

import datetime as dt
import posixpath
from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from reme_core.errors import WorkspaceError
from reme_core.schema import NoteSummary
from reme_core.search.expiry import expiry_of, parse_expires
from reme_core.studio.web import OpFailed, Page, Studio, open_page
from reme_core.workspace.notes import parse_note

OPERATION = "forget"
SOON_DAYS = 14
"""How far ahead the Status page's list looks for notes about to expire."""
QUERY_LIMIT = 10
"""At most this many notes by default for a forget by query (the operation's own default)."""
MODES = ("archive", "purge")


def router(studio: Studio) -> APIRouter:
    routes = APIRouter(include_in_schema=False)

    async def admin_page(request: Request, doing: str, change: bool = False) -> Page:
        here = await open_page(studio, request, change=change)
        if not here.may(OPERATION) and not change:
            raise OpFailed(
                403,
                "Forbidden",
                f"{doing} needs a token that may call {OPERATION!r}; yours is {here.profile!r}",
            )
        return here

    @routes.get("/studio/forget")
    async def forget_query_page(
        request: Request, query: str = "", mode: str = "archive", limit: str = ""
    ) -> Response:
        here = await admin_page(request, "forgetting notes")
        return await _query_form(here, query.strip(), mode, limit)

    @routes.get("/studio/purge")
    async def purge_page(request: Request, path: str) -> Response:
        here = await admin_page(request, "purging a note")
        return await _purge_form(here, path)

    @routes.post("/studio/purge")
    async def purge(request: Request) -> Response:
        # Authorisation is the dispatcher's (a read token's POST gets its 403); the typed path
        # is the visitor's confirmation, sent as the operation's own ``confirm``.
        here = await admin_page(request, "purging a note", change=True)
        if "query" in here.form:
            return await _forget_query(here, "purge")
        path = here.form.get("path", "")
        typed = here.form.get("confirm_path", "").strip()
        keep = _keep_sources(here)
        try:
            report = await here.op(
                OPERATION,
                path=path,
                purge=True,
                confirm=bool(path) and typed == path,
                **_keep_field(keep),
            )
        except OpFailed as exc:
            if exc.kind != "ForgetConfirmationError":
                raise
            why = (
                f"Not purged: you typed {typed!r}, not the note's path."
                if typed
                else "Not purged: type the note's path to confirm."
            )
            error = OpFailed(exc.status, exc.kind, why)
            return await _purge_form(here, path, exc.status, error, keep)
        return here.render("purged.html", report=report)

    @routes.post("/studio/forget")
    async def forget(request: Request) -> Response:
        here = await admin_page(request, "forgetting a note", change=True)
        if "query" in here.form:
            return await _forget_query(here, "archive")
        path = here.form.get("path", "")
        report = await here.op(OPERATION, path=path)
        return here.render("forgotten.html", report=report, path=path)

    @routes.get("/studio/expiring")
    async def expiring(request: Request) -> Response:
        here = await open_page(studio, request)
        if not here.may("expire"):
            return here.render("_expiring.html", available=False)
        today = today_for(here)
        found = await here.op("expire", dry_run=True, today=today + dt.timedelta(SOON_DAYS))
        days = {
            path: dt.date.fromisoformat(str(day)[:10]) for path, day in found["archived"].items()
        }
        rows = sorted(days.items(), key=lambda item: (item[1], item[0]))
        return here.render(
            "_expiring.html",
            available=True,
            expired=[(p, d) for p, d in rows if d <= today],
            soon=[(p, d) for p, d in rows if d > today],
            invalid=sorted(found["invalid"].items()),
            today=today,
            soon_days=SOON_DAYS,
        )

    return routes


def _keep_sources(here: Page) -> bool:
    """Whether the visitor ticked "keep the source files" (a purge's ``keep_sources``)."""
    return here.form.get("keep_sources", "") == "1"


def _keep_field(keep: bool) -> dict[str, bool]:
    """The operation's ``keep_sources``, sent only when asked for (the field is purge-only)."""
    return {"keep_sources": True} if keep else {}


async def _purge_form(
    here: Page,
    path: str,
    code: int = 200,
    error: OpFailed | None = None,
    keep_sources: bool = False,
) -> Response:
    dry = await here.op(OPERATION, path=path, purge=True, dry_run=True)
    target = dry["paths"][0]
    try:
        inbound = (await here.op("links", path=target))["inbound"]
    except OpFailed as exc:
        if exc.status < 500 and exc.kind != "ConfigError":
            raise
        inbound = []
    dangling = sorted({link["source"] for link in inbound} - {target})
    return here.render(
        "purge.html",
        code,
        path=target,
        paths=dry["paths"],
        purged_with=dry.get("purged_with") or {},
        keep_sources=keep_sources,
        dangling=dangling,
        error=error,
    )


def _limit(raw: str) -> int:
    if not raw.strip():
        return QUERY_LIMIT
    try:
        return int(raw)
    except ValueError:
        raise OpFailed(
            400, "ValidationError", f"limit must be a whole number, not {raw!r}"
        ) from None


async def _query_form(
    here: Page,
    query: str,
    mode: str,
    limit_raw: str,
    code: int = 200,
    error: OpFailed | None = None,
    keep_sources: bool = False,
) -> Response:
    """The forget-by-query page: the form, and once a query is given the notes a dry run of
    ``mode`` (archive or purge) takes, with the confirm step."""
    if mode not in MODES:
        raise OpFailed(400, "ValidationError", f"mode must be archive or purge, not {mode!r}")
    limit = _limit(limit_raw)
    context: dict[str, Any] = {
        "query": query,
        "mode": mode,
        "limit": limit,
        "error": error,
        "keep_sources": keep_sources,
    }
    dry = None
    if query:
        try:
            dry = await here.op(
                OPERATION, query=query, limit=limit, purge=mode == "purge", dry_run=True
            )
        except OpFailed as exc:
            if exc.status >= 500 or exc.status == 403:
                raise
            context["error"] = error or exc
            code = code if error else exc.status
    return here.render("forget_query.html", code, dry=dry, **context)


async def _forget_query(here: Page, mode: str) -> Response:
    """The confirmed forget (or purge) of the notes ``query`` matches, as listed to the visitor
    (``expect``: one path a line); refused with nothing changed when the list differs now, or,
    for a purge, when the typed query is not the query."""
    query = here.form.get("query", "").strip()
    limit_raw = here.form.get("limit", "")
    limit = _limit(limit_raw)
    shown = [p for p in here.form.get("expect", "").splitlines() if p.strip()]
    if not query:
        raise OpFailed(400, "ValidationError", "query is empty; nothing was forgotten")
    purge = mode == "purge"
    try:
        dry = await here.op(OPERATION, query=query, limit=limit, purge=purge, dry_run=True)
    except OpFailed as exc:
        if exc.status != 404:  # no note holds its words any more: say so on the form
            raise
        return await _query_form(here, query, mode, limit_raw, exc.status, exc)
    if sorted(dry["paths"]) != sorted(shown):
        changed = OpFailed(
            409,
            "Changed",
            "Nothing was changed: the query matches other notes than the list you confirmed "
            "(a note was written, changed or forgotten meanwhile). Check the new list.",
        )
        return await _query_form(here, query, mode, limit_raw, 409, changed, _keep_sources(here))
    if not purge:
        report = await here.op(OPERATION, query=query, limit=limit)
        return here.render("forgotten.html", report=report, path=None)
    typed = here.form.get("confirm_query", "").strip()
    keep = _keep_sources(here)
    try:
        report = await here.op(
            OPERATION,
            query=query,
            limit=limit,
            purge=True,
            confirm=typed == query,
            **_keep_field(keep),
        )
    except OpFailed as exc:
        if exc.kind != "ForgetConfirmationError":
            raise
        why = (
            f"Not purged: you typed {typed!r}, not the query."
            if typed
            else "Not purged: type the query to confirm."
        )
        error = OpFailed(exc.status, exc.kind, why)
        return await _query_form(here, query, mode, limit_raw, exc.status, error, keep)
    return here.render("purged.html", report=report)


def today_for(here: Page) -> dt.date:
    return dt.datetime.now(here.studio.settings.tzinfo()).date()


async def note_lifecycle(
    here: Page, read: dict[str, Any], links: list[dict[str, Any]]
) -> dict[str, Any]:
    """What a note page says about the note's lifecycle: ``expires`` (its day, whether it has
    come, or why it cannot be read), ``archived`` (the day), ``superseded`` (the newer note and
    the studio path it resolves to, or None when no note of that name exists)."""
    out: dict[str, Any] = {"expires": None, "archived": None, "superseded": None}
    path = read["path"]
    if not path.lower().endswith(".md"):
        return out
    try:
        parsed = parse_note(path, read["content"])
    except (WorkspaceError, ValueError):  # a broken frontmatter: the page already says so
        return out
    fm = parsed.frontmatter
    raw = fm.get("expires")
    if raw not in (None, ""):
        summary = NoteSummary(
            path=path,
            content_hash=read.get("content_hash") or "",
            size=len(read["content"]),
            status=parsed.status,
            date=parsed.date,
            frontmatter=fm,
        )
        today = today_for(here)
        try:
            parse_expires(raw, "expires")
            day = expiry_of(summary)
            invalid = (
                None
                if day is not None
                else "it is a duration but the note has no created or date to count from"
            )
        except ValueError as exc:
            day, invalid = None, str(exc)
        out["expires"] = {
            "raw": str(raw),
            "day": day,
            "expired": day is not None and day <= today,
            "days_left": (day - today).days if day is not None else None,
            "invalid": invalid,
        }
    if parsed.status == "archived":
        out["archived"] = {"on": str(fm.get("archived_on") or "") or None}
    if parsed.status == "superseded":
        newer = fm.get("superseded_by")
        if isinstance(newer, list):  # superseded_by: ["[[a]]"] names the first, as search does
            newer = newer[0] if newer else None
        out["superseded"] = await _newer(here, str(newer) if newer else None, links)
        out["superseded"]["on"] = str(fm.get("superseded_on") or "") or None
    return out


async def _newer(here: Page, raw: str | None, links: list[dict[str, Any]]) -> dict[str, Any]:
    """The note ``superseded_by`` names: as the index resolved it when the body links it too,
    else the workspace path it spells (``[[memory/x]]`` -> ``memory/x.md``)."""
    if raw is None:
        return {"raw": None, "label": None, "target": None}
    inner = raw.strip()
    if inner.startswith("[[") and inner.endswith("]]"):
        inner = inner[2:-2]
    name = inner.split("|", 1)[0].split("#", 1)[0].strip()
    label = f"[[{name}]]"
    for link in links:
        if link.get("raw") == name and link.get("state") == "resolved" and link.get("target"):
            return {"raw": raw, "label": label, "target": link["target"]}
    candidate = posixpath.normpath(name if name.lower().endswith(".md") else name + ".md")
    if not name or candidate.startswith(("..", "/")):
        return {"raw": raw, "label": label, "target": None}
    try:
        found = await here.op("stat", path=candidate)
    except OpFailed as exc:
        if exc.status >= 500:
            raise
        return {"raw": raw, "label": label, "target": None}
    return {"raw": raw, "label": label, "target": found["path"]}
