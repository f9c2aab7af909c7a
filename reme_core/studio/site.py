"""The studio as a site: its templates, its sessions, the workspaces it serves, and the responses
every page shares (security headers, a login page, an error to show, a redirect to send).

Below both ``login`` and ``web``: logging in needs the site, and ``web.open_page`` logs a visitor
in from a ``?token=`` URL. What the studio needs from the server that mounts it (its operations
dispatcher, how it shows the dispatcher's errors, its login-URL check) is declared here as
``StudioHost`` and handed in, so the studio imports nothing of the server.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlencode

import jinja2
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from reme_core import __version__
from reme_core.studio.render import diff_lines, highlight
from reme_core.studio.sessions import InvalidToken, Sessions

if TYPE_CHECKING:
    from reme_core.server.workspaces import WorkspaceRegistry
    from reme_core.service.principal import Principal
    from reme_core.settings import Settings

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


class StudioHost(Protocol):
    """What the studio needs from the server that mounts it; ``reme serve``'s is
    ``reme_core.server.studio_host.STUDIO_HOST``. The studio is a client of the server's
    dispatcher, as the HTTP routes and the MCP tools are, so a token gets the same answers."""

    default_workspace: str
    """The workspace a studio URL without ``ws`` means."""

    def run(
        self,
        registry: WorkspaceRegistry,
        principal: Principal,
        workspace: str,
        name: str,
        payload: dict[str, Any],
    ) -> Any:
        """Run operation ``name`` as ``principal`` on ``workspace``; blocks (a worker thread)."""
        ...

    def failure(self, exc: Exception) -> tuple[int, str, str] | None:
        """The ``(status, kind, message)`` to show for an error ``run`` raised; None for an
        error that is not a refusal or failure of the operation (it propagates)."""
        ...

    def url_login_refusal(self, headers: Mapping[str, str]) -> str | None:
        """Why a token in this request's URL may not log in, or None when it may."""
        ...


class Studio:
    """The studio's shared state: sessions, templates, the workspaces it serves, its host."""

    def __init__(
        self,
        settings: Settings,
        registry: WorkspaceRegistry,
        sessions: Sessions,
        host: StudioHost,
    ):
        self.settings = settings
        self.registry = registry
        self.sessions = sessions
        self.host = host
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


def without_token(request: Request) -> str:
    """The request's path and query without ``token``."""
    query = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
    return request.url.path + ("?" + urlencode(query) if query else "")
