"""reme studio: the web workspace ``reme serve`` shows at ``/``, on the same port and behind the
same tokens as the API.

Pages are rendered on the server (Jinja2) and made lively with htmx; the editor (CodeMirror 5),
the graph (cytoscape.js) and htmx are vendored under ``static/vendor/`` with their licences, so
nothing is fetched from a CDN and no node is needed to install. Every read and change goes
through the operations dispatcher as the logged-in token (``web.Page.op``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fastapi import FastAPI, Request
from starlette.responses import Response
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from reme_core.studio import actions, lifecycle, pages, proactive
from reme_core.studio.sessions import Sessions
from reme_core.studio.site import (
    HERE,
    STATIC_URL,
    OpFailed,
    Respond,
    Studio,
    StudioHost,
    secure,
    wants_fragment,
)

if TYPE_CHECKING:
    from reme_core.server.auth import TokenStore
    from reme_core.server.workspaces import WorkspaceRegistry
    from reme_core.settings import Settings

STUDIO_PATHS = ("/", "/studio")
"""Exact paths the studio answers, besides everything under ``/studio/``."""
STUDIO_PREFIX = "/studio/"


def mount_studio(
    app: FastAPI,
    settings: Settings,
    registry: WorkspaceRegistry,
    store: TokenStore | None,
    host: StudioHost,
) -> Studio:
    """Add the studio's pages, actions and static files to ``app``, run through ``host`` (the
    server's dispatcher). Its routes authenticate themselves (session cookie or bearer token):
    exempt ``STUDIO_PATHS`` and ``STUDIO_PREFIX`` from the API's bearer-only middleware."""
    studio = Studio(settings, registry, Sessions(store), host)
    app.include_router(pages.router(studio))
    app.include_router(proactive.router(studio))
    app.include_router(lifecycle.router(studio))
    app.include_router(actions.router(studio))
    app.mount(STATIC_URL, _Static(StaticFiles(directory=HERE / "static")), name="studio-static")

    async def respond(_: Request, exc: Exception) -> Response:
        assert isinstance(exc, Respond)
        return exc.response

    async def failed(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, OpFailed)
        visitor = studio.sessions.visitor(request)
        template = "_error.html" if wants_fragment(request) else "error.html"
        context = {"page": None, "error": exc, "logged_in": visitor is not None}
        return studio.html(template, context, exc.status)

    app.add_exception_handler(Respond, respond)
    app.add_exception_handler(OpFailed, failed)
    return studio


class _Static:
    """Static files with ``nosniff`` and a short cache: the vendored scripts change only with a
    new reme version."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers.append((b"x-content-type-options", b"nosniff"))
                headers.append((b"cache-control", b"public, max-age=3600"))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)


__all__ = ["STUDIO_PATHS", "STUDIO_PREFIX", "Studio", "mount_studio", "secure"]
