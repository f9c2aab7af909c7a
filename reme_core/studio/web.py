"""What every studio page shares: who is looking (``Page``), calling an operation on their
behalf, and opening a page (a ``?token=`` login, the CSRF check). The site they render on
(templates, security headers, login page, errors as pages) is ``site``.

Every read and every change goes through ``run_operation``, the dispatcher the HTTP API and MCP
use, so the token's profile and workspaces are checked the same way here: hiding a button is
for the eye, the dispatcher is what refuses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse

from reme_core.service.operations import OPERATIONS
from reme_core.studio.login import url_login
from reme_core.studio.sessions import (
    CSRF_FIELD,
    CSRF_HEADER,
    Visitor,
    csrf_ok,
)

# The site's names, imported from here by the pages, actions and tests as they always were.
from reme_core.studio.site import (  # noqa: F401
    CSP,
    HERE,
    SECURITY_HEADERS,
    STATIC_URL,
    OpFailed,
    Respond,
    Studio,
    secure,
    wants_fragment,
    without_token,
)


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
        if self.workspace != self.studio.host.default_workspace:
            query["ws"] = self.workspace
        return url + ("?" + urlencode(query, doseq=True, safe="/") if query else "")

    def note(self, path: str) -> str:
        return self.href("/studio/browse", path=path)

    async def op(self, name: str, **payload: Any) -> Any:
        """Run operation ``name`` as this visitor, on this workspace."""
        host = self.studio.host
        try:
            return await run_in_threadpool(
                host.run,
                self.studio.registry,
                self.visitor.principal,
                self.workspace,
                name,
                payload,
            )
        except Exception as exc:
            failure = host.failure(exc)
            if failure is None:
                raise
            raise OpFailed(*failure) from exc

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
        raise Respond(url_login(studio, request))
    visitor = studio.sessions.visitor(request)
    if visitor is None:
        if not studio.auth and request.method == "GET":  # auth off: the owner, no login
            raise Respond(studio.start_session(request, None, without_token(request)))
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
    default = studio.host.default_workspace
    workspace = wanted or (default if default in allowed else (allowed[0] if allowed else default))
    return Page(studio, request, visitor, workspace, form)
