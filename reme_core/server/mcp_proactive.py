"""The follow-ups an agent reads at session start, over MCP: a resource per workspace
(``reme://<workspace>/proactive``, the note ``daily/_proactive.md``) and a prompt
(``proactive``) that hands the same list to the model with what to do with it.

Both read through the ``proactive`` operation as the caller, with its read profile, so a token
sees exactly what ``GET /api/v1/proactive`` would show it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio.to_thread
import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.shared.exceptions import MCPError

from reme_core.errors import RemeError
from reme_core.server.http_errors import ApiError
from reme_core.service.operations import OPERATIONS

if TYPE_CHECKING:
    from reme_core.server.mcp_server import RemeMcp

OPERATION = "proactive"
PROMPT = "proactive"
SCHEME = "reme://"
SUFFIX = "/proactive"
PROMPT_INTRO = (
    "Follow-ups kept from earlier sessions' daily notes (open questions and tasks). Raise the "
    "ones that bear on what the user is doing now, briefly, once; do not invent others. Each "
    "ends with the note it was last mentioned in.\n\n"
)


def uri(workspace: str) -> str:
    return f"{SCHEME}{workspace}{SUFFIX}"


class ProactiveMcp:
    """Resource and prompt handlers beside ``RemeMcp``'s tools (its principal and workspaces)."""

    def __init__(self, handlers: RemeMcp):
        self.handlers = handlers

    def _allowed(self, ctx: ServerRequestContext[Any, Any]) -> tuple[Any, list[str]]:
        principal = self.handlers.principal(ctx)
        if principal is None or not principal.may_call(OPERATIONS[OPERATION].profile):
            return principal, []
        return principal, self.handlers.visible_workspaces(principal)

    async def _note(self, ctx: ServerRequestContext[Any, Any], workspace: str | None) -> str:
        principal, visible = self._allowed(ctx)
        if principal is None or not visible:
            raise MCPError(code=types.INVALID_PARAMS, message="this caller may not read follow-ups")
        name = workspace or self.handlers.default_for(principal)
        if name not in visible:
            raise MCPError(code=types.INVALID_PARAMS, message=f"unknown workspace {name!r}")
        payload = OPERATIONS[OPERATION].input_model()
        try:
            found = await anyio.to_thread.run_sync(
                self.handlers.runner, principal, name, OPERATION, payload
            )
        except ApiError as exc:
            raise MCPError(
                code=types.INVALID_PARAMS, message=f"{exc.kind}: {exc.message}"
            ) from None
        except RemeError as exc:
            raise MCPError(
                code=types.INTERNAL_ERROR, message=f"{type(exc).__name__}: {exc}"
            ) from None
        if found.get("note"):
            return found["note"]
        return "No follow-ups yet: the proactive pipeline has not written daily/_proactive.md.\n"

    async def list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        _, visible = self._allowed(ctx)
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=uri(name),
                    name=f"{name}-proactive",
                    title=f"Follow-ups to raise ({name})",
                    description="Open questions and tasks from recent daily notes; read at "
                    "session start.",
                    mime_type="text/markdown",
                )
                for name in visible
            ]
        )

    async def read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        given = str(params.uri)
        if not (given.startswith(SCHEME) and given.endswith(SUFFIX)):
            raise MCPError(code=types.INVALID_PARAMS, message=f"unknown resource {given!r}")
        workspace = given[len(SCHEME) : -len(SUFFIX)]
        text = await self._note(ctx, workspace)
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=given, mime_type="text/markdown", text=text)]
        )

    async def list_prompts(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        _, visible = self._allowed(ctx)
        if not visible:
            return types.ListPromptsResult(prompts=[])
        argument = types.PromptArgument(
            name="workspace", description="Workspace to read (default: yours).", required=False
        )
        return types.ListPromptsResult(
            prompts=[
                types.Prompt(
                    name=PROMPT,
                    title="Follow-ups to raise",
                    description="The open follow-up topics, to raise at the start of a session.",
                    arguments=[argument] if len(self.handlers.workspaces) > 1 else [],
                )
            ]
        )

    async def get_prompt(
        self, ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        if params.name != PROMPT:
            raise MCPError(code=types.INVALID_PARAMS, message=f"unknown prompt {params.name!r}")
        workspace = (params.arguments or {}).get("workspace")
        text = await self._note(ctx, workspace)
        return types.GetPromptResult(
            description="Follow-ups to raise",
            messages=[
                types.PromptMessage(
                    role="user", content=types.TextContent(type="text", text=PROMPT_INTRO + text)
                )
            ],
        )
