"""MCP tools generated from ``OPERATIONS``: streamable HTTP (mounted at ``/mcp``) and stdio.

One tool per operation, plus ``health``. The tool list a client sees, and the calls it may make,
follow its principal's profile and workspaces; a call is re-checked even for a tool that was never
listed to the caller (fail closed). Tool failures (refusals, validation, ``RemeError``) come back
as ``isError`` results with the message, so the model can read them and correct itself.

Who is calling: over HTTP, the auth middleware sets ``current_principal`` for the request; the
ASGI app here copies it into the request scope, and the tool handlers read it back from the
HTTP request the SDK hands them (so it does not matter which task the SDK runs handlers in).
Without HTTP (stdio, in-process) the handlers read ``current_principal``, else the server's
``fallback`` principal: ``LOCAL_ADMIN`` for stdio, where the client spawned the server itself.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError
from starlette.types import Receive, Scope, Send

from reme_core import __version__
from reme_core.errors import RemeError
from reme_core.runtime import Reme
from reme_core.server.http_errors import ApiError
from reme_core.server.mcp_proactive import ProactiveMcp
from reme_core.server.principal import LOCAL_ADMIN, Principal, current_principal
from reme_core.service.operations import OPERATIONS, Input, Operation

logger = logging.getLogger(__name__)

GetReme = Callable[[str], Reme]
Runner = Callable[[Principal, str, str, Input], Any]
"""``runner(principal, workspace, operation name, validated input) -> JSON-ready result``."""
"""Workspace name -> its open ``Reme`` (the server's registry; may raise ``RemeError``)."""

DEFAULT_WORKSPACE = "default"
PRINCIPAL_SCOPE_KEY = "reme.principal"
"""ASGI scope key where ``McpHttpApp`` stores the request's principal for the tool handlers."""

HEALTH = "health"
_NO_ARGUMENTS: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}


def _title(name: str) -> str:
    return name.replace("_", " ").capitalize()


def _tool(op: Operation, workspaces: list[str] | None, default: str) -> types.Tool:
    """``workspaces``: the names to offer as the ``workspace`` argument; None adds none."""
    schema = op.input_model.model_json_schema()
    if workspaces is not None:
        schema.setdefault("properties", {})["workspace"] = {
            "type": "string",
            "enum": list(workspaces),
            "default": default,
            "description": "Workspace to act on.",
        }
    title = _title(op.name)
    return types.Tool(
        name=op.name,
        title=title,
        description=op.summary,
        input_schema=schema,
        annotations=types.ToolAnnotations(
            title=title,
            read_only_hint=op.read_only,
            destructive_hint=op.destructive,
            idempotent_hint=op.idempotent,
            # Every tool acts on the workspace only (pipelines call a model, but change notes).
            open_world_hint=False,
        ),
    )


_HEALTH_TOOL = types.Tool(
    name=HEALTH,
    title="Health",
    description="Whether the server is up, its version, and the workspaces this caller may use.",
    input_schema=_NO_ARGUMENTS,
    annotations=types.ToolAnnotations(
        title="Health",
        read_only_hint=True,
        destructive_hint=False,
        idempotent_hint=True,
        open_world_hint=False,
    ),
)


class _Refused(Exception):
    """A call this principal may not make, or with arguments that cannot be honoured."""


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=message)], is_error=True
    )


def _ok(data: Any) -> types.CallToolResult:
    text = json.dumps(data, ensure_ascii=False, default=str)
    # structuredContent must be an object for the handshake-era protocol versions.
    structured = data if isinstance(data, dict) else None
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=structured
    )


def _validation_message(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "arguments"
        parts.append(f"{where}: {error['msg']}")
    return "invalid arguments: " + "; ".join(parts)


class RemeMcp:
    """The tool handlers for one set of served workspaces."""

    def __init__(
        self,
        get_reme: GetReme,
        workspaces: Sequence[str],
        fallback: Principal | None = None,
        runner: Runner | None = None,
    ):
        if not workspaces:
            raise ValueError("an MCP server needs at least one workspace")
        self.get_reme = get_reme
        self.runner = runner or self._run_directly
        self.workspaces = list(workspaces)
        self.default = DEFAULT_WORKSPACE if DEFAULT_WORKSPACE in workspaces else workspaces[0]
        self.fallback = fallback

    def principal(self, ctx: ServerRequestContext[Any, Any]) -> Principal | None:
        request = ctx.request
        if request is not None:
            # HTTP: only what the auth middleware established for this very POST counts.
            return request.scope.get(PRINCIPAL_SCOPE_KEY)
        return current_principal.get() or self.fallback

    def visible_workspaces(self, principal: Principal) -> list[str]:
        return [name for name in self.workspaces if principal.may_use(name)]

    def tools(self, principal: Principal | None) -> list[types.Tool]:
        if principal is None:
            return []
        workspaces = self.visible_workspaces(principal)
        if not workspaces:
            return [_HEALTH_TOOL]
        # One served workspace needs no argument; with more, offer only those this caller may use.
        offered = workspaces if len(self.workspaces) > 1 else None
        default = self.default_for(principal)
        listed = [
            _tool(op, offered, default)
            for op in OPERATIONS.values()
            if principal.may_call(op.profile)
        ]
        return [*listed, _HEALTH_TOOL]

    async def list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.tools(self.principal(ctx)))

    async def call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        principal = self.principal(ctx)
        name = params.name
        if name != HEALTH and name not in OPERATIONS:
            # Not a tool at all: a protocol error, as the spec asks for unknown tools.
            raise MCPError(code=types.INVALID_PARAMS, message=f"unknown tool {name!r}")
        try:
            if principal is None:
                raise _Refused("not authenticated: no principal for this request")
            arguments = dict(params.arguments or {})
            if name == HEALTH:
                if arguments:
                    raise _Refused(f"health takes no arguments, got {sorted(arguments)}")
                return _ok(self.health(principal))
            op = OPERATIONS[name]
            if not principal.may_call(op.profile):
                raise _Refused(
                    f"tool {name!r} needs the {op.profile} profile; this token is {principal.profile}"
                )
            workspace = self.workspace_for(principal, arguments.pop("workspace", None))
            payload = op.input_model.model_validate(arguments)
            # Handlers block (disk, index locks, model calls): keep them off the event loop.
            data = await anyio.to_thread.run_sync(self.runner, principal, workspace, name, payload)
        except _Refused as exc:
            return _error(str(exc))
        except ApiError as exc:  # the server's own refusals (profile, workspace), via its runner
            return _error(f"{exc.kind}: {exc.message}")
        except ValidationError as exc:
            return _error(_validation_message(exc))
        except RemeError as exc:
            return _error(f"{type(exc).__name__}: {exc}")
        except Exception as exc:  # a bug must not take the connection down
            logger.exception("MCP tool %s failed", name)
            return _error(f"internal error in {name}: {type(exc).__name__}: {exc}")
        return _ok(data)

    def _run_directly(self, principal: Principal, workspace: str, name: str, payload: Input) -> Any:
        return OPERATIONS[name].call(self.get_reme(workspace), payload)

    def default_for(self, principal: Principal) -> str:
        visible = self.visible_workspaces(principal)
        return self.default if self.default in visible or not visible else visible[0]

    def workspace_for(self, principal: Principal, given: Any) -> str:
        workspace = self.default_for(principal) if given is None else given
        if not isinstance(workspace, str) or workspace not in self.workspaces:
            raise _Refused(
                f"unknown workspace {workspace!r}; available: "
                + ", ".join(self.visible_workspaces(principal))
            )
        if not principal.may_use(workspace):
            raise _Refused(f"this token may not use workspace {workspace!r}")
        return workspace

    def health(self, principal: Principal) -> dict[str, Any]:
        return {
            "status": "ok",
            "version": __version__,
            "workspaces": self.visible_workspaces(principal),
        }


def build_mcp_server(
    get_reme: GetReme,
    workspaces: Sequence[str],
    *,
    fallback: Principal | None = None,
    runner: Runner | None = None,
) -> Server[Any]:
    """The low-level MCP server. ``fallback`` is who calls when no request principal is set
    (``LOCAL_ADMIN`` for stdio only; ``None`` refuses everything then). ``runner`` runs one
    operation (the server passes its dispatcher, so MCP calls are counted in flight, serialised
    per pipeline and recorded in /status like HTTP calls); by default the operation runs on
    ``get_reme(workspace)`` directly."""
    handlers = RemeMcp(get_reme, workspaces, fallback, runner)
    follow_ups = ProactiveMcp(handlers)  # the follow-ups note as a resource and a prompt
    return Server(
        "reme",
        version=__version__,
        title="reme",
        instructions=(
            "Memory over a workspace of Markdown notes: search before answering from memory, "
            "read notes by path, write or edit notes to remember."
        ),
        on_list_tools=handlers.list_tools,
        on_call_tool=handlers.call_tool,
        on_list_resources=follow_ups.list_resources,
        on_read_resource=follow_ups.read_resource,
        on_list_prompts=follow_ups.list_prompts,
        on_get_prompt=follow_ups.get_prompt,
    )


class McpHttpApp:
    """ASGI app serving MCP streamable HTTP (stateless, JSON responses) at whatever path it is
    routed to; it ignores the path. Run ``lifespan()`` around serving (see ``build_mcp_app``)."""

    def __init__(self, server: Server[Any], security: TransportSecuritySettings | None = None):
        self.server = server
        self.security = security
        self._manager: StreamableHTTPSessionManager | None = None

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        # A session manager runs only once; a fresh one per lifespan lets an app restart (tests).
        manager = StreamableHTTPSessionManager(
            app=self.server,
            # Stateless: every POST stands alone, so each request is authorised on its own.
            stateless=True,
            json_response=True,
            # None: the SDK checks only Content-Type; Host/Origin are the server's middleware's.
            security_settings=self.security,
        )
        async with manager.run():
            self._manager = manager
            try:
                yield
            finally:
                self._manager = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return  # lifespan is run by the host app via lifespan(); nothing else is served
        manager = self._manager
        if manager is None:
            body = b'{"error": "MCP is not running (lifespan not entered)"}'
            await send(
                {
                    "type": "http.response.start",
                    "status": 503,
                    "headers": [(b"content-type", b"application/json")],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        scope[PRINCIPAL_SCOPE_KEY] = current_principal.get()
        await manager.handle_request(scope, receive, send)


def build_mcp_app(
    get_reme: GetReme,
    workspaces: Sequence[str],
    *,
    security: TransportSecuritySettings | None = None,
    runner: Runner | None = None,
) -> tuple[McpHttpApp, Callable[[], AbstractAsyncContextManager[None]]]:
    """``(asgi_app, lifespan)`` for MCP over streamable HTTP.

    Route the app at ``/mcp`` (``app.add_route("/mcp", asgi_app)``; a Starlette ``Mount`` would
    answer ``/mcp`` with a redirect to ``/mcp/``), behind the auth middleware that sets
    ``current_principal``, and enter ``lifespan()`` in the host app's lifespan::

        async with lifespan():
            yield
    """
    app = McpHttpApp(build_mcp_server(get_reme, workspaces, runner=runner), security)
    return app, app.lifespan


async def serve_stdio(get_reme: GetReme, workspaces: Sequence[str]) -> None:
    """Serve MCP over this process's stdin/stdout until the client closes it."""
    server = build_mcp_server(get_reme, workspaces, fallback=LOCAL_ADMIN)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def run_stdio(get_reme: GetReme, workspaces: Sequence[str]) -> None:
    """Blocking ``serve_stdio``: the process that a client spawned acts as the local owner."""
    anyio.run(serve_stdio, get_reme, workspaces)
