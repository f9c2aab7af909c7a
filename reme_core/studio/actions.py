"""The studio's changes (POST): save, create, move, delete, revert, review decisions, login and
logout. Each checks the CSRF token (``open_page(change=True)``) and then calls the operation as
the visitor: a read token's forged POST gets the dispatcher's 403 like any API call."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import RedirectResponse, Response

from reme_core.studio.login import form_login
from reme_core.studio.render import text_diff
from reme_core.studio.review import decide
from reme_core.studio.web import OpFailed, Page, Studio, open_page, secure


def router(studio: Studio) -> APIRouter:
    actions = APIRouter(include_in_schema=False)

    async def page(request: Request) -> Page:
        return await open_page(studio, request, change=True)

    def back_to(here: Page, url: str, /, **params: str) -> Response:
        return secure(RedirectResponse(here.href(url, **params), status_code=303))

    @actions.post("/studio/login")
    async def login(request: Request) -> Response:
        return form_login(studio, request, await request.form())

    @actions.post("/studio/logout")
    async def logout(request: Request) -> Response:
        here = await page(request)
        if here.visitor.session is not None:
            studio.sessions.logout(here.visitor.session)
        response = studio.login_page(request, "Logged out.", status=200)
        response.delete_cookie(studio.sessions.cookie_name(request), path="/")
        return response

    @actions.post("/studio/save")
    async def save(request: Request) -> Response:
        here = await page(request)
        path = here.form.get("path", "").strip()
        content = here.form.get("content", "").replace("\r\n", "\n")
        expected = here.form.get("expected_hash") or None
        try:
            written = await here.op("write", path=path, content=content, expected_hash=expected)
        except OpFailed as exc:
            if exc.kind != "ConflictError":
                raise
            return await _conflict(here, path, content, exc)
        return back_to(here, "/studio/browse", path=written["path"], saved="1")

    @actions.post("/studio/create")
    async def create(request: Request) -> Response:
        here = await page(request)
        path = here.form.get("path", "").strip()
        content = here.form.get("content", "").replace("\r\n", "\n")
        try:
            written = await here.op("write", path=path, content=content, create_only=True)
        except OpFailed as exc:
            # The token's refusal is the error page; a refused path (outside the workspace,
            # a bad name or suffix) is the form again, with what was typed kept.
            if exc.status >= 500 or exc.kind in ("Forbidden", "Unauthorized"):
                raise
            return here.render("new.html", exc.status, path=path, content=content, error=exc)
        return back_to(here, "/studio/browse", path=written["path"], saved="1")

    @actions.post("/studio/move")
    async def move(request: Request) -> Response:
        here = await page(request)
        src = here.form.get("path", "")
        dst = here.form.get("dst", "").strip()
        expected = here.form.get("expected_hash") or None
        moved = await here.op("move", src=src, dst=dst, expected_hash=expected)
        return here.render("moved.html", moved=moved)

    @actions.post("/studio/delete")
    async def delete(request: Request) -> Response:
        here = await page(request)
        if here.form.get("confirm") != "yes":
            raise OpFailed(400, "BadRequest", "deleting needs the confirmation box ticked")
        path = here.form.get("path", "")
        expected = here.form.get("expected_hash") or None
        deleted = await here.op("delete", path=path, expected_hash=expected)
        return here.render("deleted.html", deleted=deleted)

    @actions.post("/studio/revert")
    async def revert(request: Request) -> Response:
        here = await page(request)
        run = here.form.get("run", "")
        confirm = here.form.get("confirm") == "yes"
        force = here.form.get("force") == "yes"
        try:
            done = await here.op("revert", run=run, confirm=confirm, force=force)
        except OpFailed as exc:
            if exc.kind not in ("RevertConfirmationError", "SnapshotRevertError"):
                raise
            preview = await here.op("revert", run=run, dry_run=True)
            never = preview["not_revertible"]
            return here.render(
                "revert.html", exc.status, plan=preview["plan"], error=exc, not_revertible=never
            )
        return here.render("reverted.html", done=done)

    @actions.post("/studio/review/decide")
    async def review_decide(request: Request) -> Response:
        here = await page(request)
        action = here.form.get("action", "")
        if action not in ("approve", "reject"):
            raise OpFailed(400, "BadRequest", "action must be approve or reject")
        raw = await request.form()
        ids = [v for v in raw.getlist("id") if isinstance(v, str) and v]
        verb = here.form.get("verb", "")
        if not ids and not verb:
            raise OpFailed(400, "BadRequest", "choose proposals, or a verb to decide in bulk")
        reason = here.form.get("reason", "").strip()
        return await decide(here, action, ids, verb, reason)

    return actions


async def _conflict(here: Page, path: str, content: str, exc: OpFailed) -> Response:
    """The note changed since the editor loaded it: show what changed, keep the visitor's text,
    write nothing. Saving again needs an explicit choice to replace the newer version."""
    try:
        current = await here.op("read", path=path)
        disk, disk_hash = current["content"], current["content_hash"]
    except OpFailed:
        disk, disk_hash = "", ""  # deleted meanwhile: saving recreates it
    diff = text_diff(disk, content, f"{path} (on disk now)", f"{path} (your version)")
    return here.render(
        "edit.html",
        409,
        path=path,
        content=content,
        expected_hash=disk_hash,
        conflict={"message": exc.message, "diff": diff, "deleted": not disk_hash},
    )
