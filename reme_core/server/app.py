"""The HTTP application: operation routes, ``/health``, ``/status``, MCP at ``/mcp``, and the
middleware every request passes (security checks, then auth).

Request path, outermost first: SecurityMiddleware (Host, Origin, body size) -> CORS (only when
``server.allowed_origins`` is set) -> AuthMiddleware (bearer token -> principal) -> routes. The
studio's pages (``/`` and ``/studio/...``) authenticate themselves: a session cookie or a bearer.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request, Security
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from reme_core import __version__
from reme_core.errors import RemeError
from reme_core.server.api_docs import DOCS_PATH, SCHEMA_PATH, add_api_docs
from reme_core.server.auth import AuthMiddleware, TokenStore
from reme_core.server.dispatch import run_operation
from reme_core.server.get_routes import get_router
from reme_core.server.http_errors import (
    ApiError,
    error_response,
    status_for,
    validation_message,
)
from reme_core.server.routes import BEARER, Caller, caller, operation_router
from reme_core.server.security import SecurityMiddleware
from reme_core.server.studio_host import STUDIO_HOST
from reme_core.server.workspaces import WorkspaceRegistry
from reme_core.settings import Settings
from reme_core.studio import STUDIO_PATHS, STUDIO_PREFIX, mount_studio

log = logging.getLogger("reme.server")

Hook = Callable[[], Awaitable[Any] | Any]
"""A startup or shutdown hook: a plain or async callable without arguments."""
Lifespan = Callable[[], AbstractAsyncContextManager[Any]]
"""Something to run for as long as the app runs (the MCP session manager)."""

MCP_PATH = "/mcp"
DOCS_PATHS = (SCHEMA_PATH, DOCS_PATH)
PUBLIC_PATHS = ("/health", *DOCS_PATHS)
"""Paths served without a token: liveness, and the API's own description."""


def create_app(
    settings: Settings,
    registry: WorkspaceRegistry,
    token_store: TokenStore | None,
    *,
    mcp_app: ASGIApp | None = None,
    lifespans: Sequence[Lifespan] = (),
    on_startup: Sequence[Hook] = (),
    on_shutdown: Sequence[Hook] = (),
) -> FastAPI:
    """The ASGI app for ``reme serve``.

    ``token_store`` None means auth is off (``server.auth: false``): every caller is the local
    owner, which ``serve`` only allows on loopback addresses. ``mcp_app`` is served at exactly
    ``/mcp``, behind the same checks, with the full path (build it with its endpoint at
    ``/mcp``). ``lifespans`` (e.g. the MCP session manager's) are entered when the app starts,
    in order, and exited in reverse when it stops. ``on_startup`` hooks then run in order;
    ``on_shutdown`` hooks run in order when the app stops, before the lifespans exit.
    """
    server = settings.server
    app = FastAPI(
        title="reme",
        version=__version__,
        summary="Local-first memory for AI agents: Markdown notes, search, pipelines.",
        lifespan=_lifespan(lifespans, on_startup, on_shutdown),
        # Swagger UI and ReDoc load from a CDN (blank offline): /docs is our own page instead.
        docs_url=None,
        redoc_url=None,
    )
    # For the MCP app and hooks, which get the app (or a request) and need the same objects.
    app.state.settings = settings
    app.state.registry = registry
    app.state.token_store = token_store

    app.include_router(operation_router(registry))
    app.include_router(get_router(registry, caller))
    _add_status_routes(app, registry)
    # The web workspace at / (its pages check the session cookie or a bearer token themselves).
    studio = mount_studio(app, settings, registry, token_store, STUDIO_HOST)
    add_api_docs(app, studio)
    if mcp_app is not None:
        app.router.routes.append(Route(MCP_PATH, _Asgi(mcp_app), include_in_schema=False))
    _add_error_handlers(app)

    # add_middleware wraps what is already there: the last added runs first.
    app.add_middleware(
        AuthMiddleware,
        store=token_store,
        public_paths=(*PUBLIC_PATHS, *STUDIO_PATHS),
        own_auth_prefixes=(STUDIO_PREFIX,),
    )
    if server.allowed_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=server.allowed_origins,
            allow_methods=["GET", "POST", "DELETE", "OPTIONS"],
            allow_headers=[
                "Authorization",
                "Content-Type",
                "X-Reme-Workspace",
                "Mcp-Session-Id",
                "Mcp-Protocol-Version",
                "Last-Event-ID",
            ],
            expose_headers=["Mcp-Session-Id"],
        )
    app.add_middleware(
        SecurityMiddleware,
        bound_host=server.host,
        allowed_hosts=server.allowed_hosts,
        allowed_origins=server.allowed_origins,
        max_body_bytes=server.max_body_bytes,
    )
    return app


class _Asgi:
    """Makes Starlette's Route treat any ASGI callable as an app, not a request handler."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


def _lifespan(
    lifespans: Sequence[Lifespan], on_startup: Sequence[Hook], on_shutdown: Sequence[Hook]
) -> Callable[[FastAPI], Any]:
    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            for context in lifespans:
                await stack.enter_async_context(context())
            for hook in on_startup:
                await _call(hook)
            try:
                yield
            finally:
                for hook in on_shutdown:
                    try:
                        await _call(hook)
                    except Exception:  # the other hooks and the workspaces must still close
                        log.exception("shutdown hook %r failed", hook)

    return lifespan


async def _call(hook: Hook) -> None:
    if inspect.iscoroutinefunction(hook):
        await hook()
    else:
        result = await run_in_threadpool(hook)
        if inspect.isawaitable(result):
            await result


def _add_status_routes(app: FastAPI, registry: WorkspaceRegistry) -> None:
    @app.get("/health", summary="Liveness: the process answers. No token needed.")
    async def health() -> dict[str, Any]:
        return {"status": "ok", "version": __version__}

    @app.get(
        "/status",
        dependencies=[Security(BEARER)],
        summary="Per workspace this token may use: notes, chunks, index freshness, vectors, "
        "last runs, errors, degraded components.",
    )
    async def status(request: Request) -> dict[str, Any]:
        who: Caller = caller(request)
        report: dict[str, Any] = {}
        for name in registry.names:
            if not who.principal.may_use(name):
                continue
            try:
                report[name] = await run_in_threadpool(
                    run_operation, registry, who.principal, name, "status", {}
                )
            except Exception as exc:  # one broken workspace is reported, not fatal to the rest
                report[name] = {"error": {"type": type(exc).__name__, "message": str(exc)}}
        return {"version": __version__, "workspaces": report}


def _add_error_handlers(app: FastAPI) -> None:
    async def api_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ApiError)
        return error_response(exc.status, exc.kind, exc.message)

    async def invalid(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError | ValidationError)
        return error_response(422, "ValidationError", validation_message(exc))

    async def reme_error(_: Request, exc: Exception) -> JSONResponse:
        return error_response(status_for(exc), type(exc).__name__, str(exc))

    async def unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.error("unhandled error", exc_info=exc)
        return error_response(
            500, "InternalError", f"{type(exc).__name__} (details are in the server log)"
        )

    async def http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        if exc.status_code == 404:
            message = f"no endpoint {request.url.path} (the API is described at /docs)"
            return error_response(404, "NotFoundError", message)
        return error_response(exc.status_code, "HTTPError", str(exc.detail), headers=exc.headers)

    app.add_exception_handler(ApiError, api_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(RequestValidationError, invalid)
    app.add_exception_handler(ValidationError, invalid)
    app.add_exception_handler(RemeError, reme_error)
    app.add_exception_handler(Exception, unexpected)
