"""What every studio page shares: who is looking (``Page``), calling an operation on their
behalf, rendering a template with the security headers, and turning errors into pages.

Every read and every change goes through ``run_operation``, the dispatcher the HTTP API and MCP
use, so the token's profile and workspaces are checked the same way here: hiding a button is
for the eye, the dispatcher is what refuses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import jinja2
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from reme_core import __version__
from reme_core.errors import RemeError
from reme_core.server.dispatch import run_operation
from reme_core.server.http_errors import ApiError, status_for, validation_message
from reme_core.server.workspaces import DEFAULT, WorkspaceRegistry
from reme_core.service.operations import OPERATIONS
from reme_core.settings import Settings
from reme_core.studio.render import diff_lines, highlight
from reme_core.studio.sessions import (
    CSRF_FIELD,
    CSRF_HEADER,
    InvalidToken,
    Sessions,
    Visitor,
    csrf_ok,
)

HERE = Path(__file__).parent
STATIC_URL = "/studio/static"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; form-action 'self'; frame-ancestors 'none'; "
    "base-uri 'none'"
)
"""No inline script or style anywhere: a note that slipped past the sanitiser still could not
run code."""
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    # The login URL carries the token: no Referer leaves the server. (Not "no-referrer": with
    # it a browser sends "Origin: null" on form posts, which the Origin check refuses.)
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
    "Vary": "HX-Request, Cookie",
}


class Respond(Exception):
    """Stop handling and send this response (a login redirect, a login page)."""

    def __init__(self, response: Response):
        self.response = response


class OpFailed(Exception):
    """An operation refused or failed; shown as an error page (or panel) with its status."""

    def __init__(self, status: int, kind: str, message: str):
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message


class Studio:
    """The studio's shared state: sessions, templates, the workspaces it serves."""

    def __init__(self, settings: Settings, registry: WorkspaceRegistry, sessions: Sessions):
        self.settings = settings
        self.registry = registry
        self.sessions = sessions
        self.env = jinja2.Environment(
            loader=jinja2.FileSystemLoader(HERE / "templates"),
            autoescape=True,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.filters["highlight"] = highlight
        self.env.filters["diff_lines"] = diff_lines
        self.env.globals.update(static=STATIC_URL, version=__version__)

    @property
    def auth(self) -> bool:
        return self.sessions.store is not None

    def html(
        self, template: str, context: dict[str, Any], status: int = 200, **headers: str
    ) -> HTMLResponse:
        body = self.env.get_template(template).render(context)
        return secure(HTMLResponse(body, status_code=status, headers=headers or None))

    def login_page(self, request: Request, message: str = "", status: int = 401) -> Response:
        context = {"page": None, "message": message, "auth": self.auth}
        response = self.html("login.html", context, status)
        if request.headers.get("hx-request"):
            response.headers["HX-Redirect"] = "/studio/login"
        return response

    def start_session(self, request: Request, secret: str | None, to: str) -> Response:
        """Log in with ``secret`` and redirect to ``to`` (a local path), cookie set."""
        try:
            session = self.sessions.login(secret)
        except InvalidToken:
            raise Respond(
                self.login_page(request, "That token is not valid (unknown or revoked).")
            ) from None
        response = secure(RedirectResponse(to, status_code=303))
        response.set_cookie(
            self.sessions.cookie_name(request),
            session.id,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
            path="/",
        )
        return response


def wants_fragment(request: Request) -> bool:
    """Whether htmx asked for a fragment (not when it restores a page from the browser's
    history: that needs the whole page)."""
    headers = request.headers
    return bool(headers.get("hx-request")) and not headers.get("hx-history-restore-request")


def secure(response: Response) -> Response:
    for key, value in SECURITY_HEADERS.items():
        response.headers.setdefault(key, value)
    return response


@dataclass
class Page:
    """One request to the studio: the visitor, the workspace it looks at, and helpers."""

    studio: Studio
    request: Request
    visitor: Visitor
    workspace: str
    form: dict[str, str] = field(default_factory=dict)

    @property
    def workspaces(self) -> list[str]:
        return [n for n in self.studio.registry.names if self.visitor.principal.may_use(n)]

    @property
    def profile(self) -> str:
        return self.visitor.principal.profile

    @property
    def csrf(self) -> str:
        return self.visitor.csrf

    @property
    def htmx(self) -> bool:
        return wants_fragment(self.request)

    def may(self, operation: str) -> bool:
        """Whether this visitor's token may call ``operation`` (it exists on this server)."""
        op = OPERATIONS.get(operation)
        return op is not None and self.visitor.may(op.profile)

    def has(self, operation: str) -> bool:
        return operation in OPERATIONS

    def href(self, url: str, /, **params: Any) -> str:
        """A studio URL on this page's workspace; empty parameters are left out."""
        query = {k: v for k, v in params.items() if v is not None and v != ""}
        if self.workspace != DEFAULT:
            query["ws"] = self.workspace
        return url + ("?" + urlencode(query, doseq=True, safe="/") if query else "")

    def note(self, path: str) -> str:
        return self.href("/studio/browse", path=path)

    async def op(self, name: str, **payload: Any) -> Any:
        """Run operation ``name`` as this visitor, on this workspace."""
        try:
            return await run_in_threadpool(
                run_operation,
                self.studio.registry,
                self.visitor.principal,
                self.workspace,
                name,
                payload,
            )
        except ApiError as exc:
            raise OpFailed(exc.status, exc.kind, exc.message) from exc
        except ValidationError as exc:
            raise OpFailed(422, "ValidationError", validation_message(exc)) from exc
        except RemeError as exc:
            raise OpFailed(status_for(exc), type(exc).__name__, str(exc)) from exc

    def render(self, template: str, code: int = 200, /, **context: Any) -> HTMLResponse:
        """``template`` with ``context`` (and this page as ``page``), HTTP status ``code``."""
        return self.studio.html(template, {"page": self, **context}, code)


async def open_page(studio: Studio, request: Request, *, change: bool = False) -> Page:
    """The page context for ``request``, or a ``Respond`` with a login page or redirect.

    ``?token=`` on a studio URL logs in (a top-level navigation only, and asking before it
    replaces a live session: ``login.url_login``) and redirects to the same URL without it. A
    change (``change=True``, every POST) made with the session cookie needs the session's CSRF
    token, in the form field ``csrf`` or the ``X-CSRF-Token`` header.
    """
    if "token" in request.query_params and request.method == "GET":
        from reme_core.studio.login import url_login  # it builds on this module

        raise Respond(url_login(studio, request))
    visitor = studio.sessions.visitor(request)
    if visitor is None:
        if not studio.auth and request.method == "GET":  # auth off: the owner, no login
            raise Respond(studio.start_session(request, None, _without_token(request)))
        raise Respond(studio.login_page(request, "Log in to use the studio."))
    form: dict[str, str] = {}
    if change:
        raw = await request.form()
        form = {k: v for k, v in raw.items() if isinstance(v, str)}
        if not csrf_ok(visitor, form.get(CSRF_FIELD) or request.headers.get(CSRF_HEADER)):
            raise OpFailed(
                403,
                "Forbidden",
                "this form is stale or was not sent by the studio (CSRF "
                "token missing or wrong); reload the page and try again",
            )
    names = studio.registry.names
    wanted = form.get("ws") or request.query_params.get("ws")
    allowed = [n for n in names if visitor.principal.may_use(n)]
    workspace = wanted or (DEFAULT if DEFAULT in allowed else (allowed[0] if allowed else DEFAULT))
    return Page(studio, request, visitor, workspace, form)


def _without_token(request: Request) -> str:
    query = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
    return request.url.path + ("?" + urlencode(query) if query else "")
