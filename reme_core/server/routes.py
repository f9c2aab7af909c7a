"""``POST /api/v1/<operation>``: one typed route per operation, generated from ``OPERATIONS``, so
the OpenAPI schema shows each operation's own input model and required profile."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Header, Query, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import Field
from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse

from reme_core.server.dispatch import authorize, run_operation
from reme_core.server.http_errors import ApiError
from reme_core.server.principal import Principal
from reme_core.server.workspaces import DEFAULT, WorkspaceRegistry
from reme_core.service.operations import OPERATIONS, Input, Operation, SearchInput

# Declares the scheme in OpenAPI (the docs' "Authorize" button); AuthMiddleware does the checking.
BEARER = HTTPBearer(auto_error=False, description="A token from `reme token create`.")


class SearchRequest(SearchInput):
    """The search operation's input plus the one thing only HTTP offers: the shared
    workspaces. Validated once, here; the dispatcher takes it as the ``SearchInput`` it is."""

    include_shared: bool = Field(
        False,
        description="Also search server.shared_workspaces this token may use; each hit names "
        "its workspace.",
    )


@dataclass(frozen=True)
class Caller:
    principal: Principal
    workspace: str


def caller(
    request: Request,
    workspace: Annotated[
        str | None, Query(description="Workspace name (or header X-Reme-Workspace).")
    ] = None,
    x_reme_workspace: Annotated[str | None, Header(description="Workspace name.")] = None,
    _credentials: Annotated[HTTPAuthorizationCredentials | None, Security(BEARER)] = None,
) -> Caller:
    """Who calls, on which workspace (default: the one the server was started on)."""
    principal = getattr(request.state, "principal", None)
    if principal is None:  # only a public path lacks one, and no route here is public
        raise ApiError(401, "Unauthorized", "no credentials")
    if workspace and x_reme_workspace and workspace != x_reme_workspace:
        raise ApiError(
            400,
            "BadRequest",
            f"workspace {workspace!r} (query) and {x_reme_workspace!r} (header) disagree",
        )
    return Caller(principal, x_reme_workspace or workspace or DEFAULT)


def operation_router(registry: WorkspaceRegistry) -> APIRouter:
    router = APIRouter(prefix="/api/v1")
    for op in OPERATIONS.values():
        model: type[Input] = SearchRequest if op.name == "search" else op.input_model
        router.add_api_route(
            f"/{op.name}",
            _endpoint(op, model, registry),
            methods=["POST"],
            name=op.name,
            operation_id=op.name,
            summary=op.summary,
            description=_description(op),
            tags=[op.profile],
        )
    return router


def _endpoint(op: Operation, model: type[Input], registry: WorkspaceRegistry) -> Any:
    def guard(request: Request, found: Annotated[Caller, Depends(caller)]) -> Caller:
        # A dependency runs before the body is validated: a read token is told it may not
        # delete, not that its delete request was malformed.
        authorize(registry, found.principal, found.workspace, op.profile)
        json_body(request)
        return found

    optional = all(not f.is_required() for f in model.model_fields.values())

    async def endpoint(who: Caller, payload: Input | None) -> JSONResponse:
        given = payload if payload is not None else model()
        # A SearchRequest is a SearchInput and goes on as it is, typed (never dumped and
        # rebuilt); include_shared, which only HTTP offers, goes to the dispatcher beside it.
        include_shared = isinstance(given, SearchRequest) and given.include_shared
        result = await run_in_threadpool(
            run_operation,
            registry,
            who.principal,
            who.workspace,
            op.name,
            given,
            include_shared=include_shared,
        )
        return JSONResponse(result)

    # The signature FastAPI reads: real types (not strings), so each route gets its own model.
    body = Annotated[model | None if optional else model, Body()]  # type: ignore[valid-type]
    endpoint.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter(
                "who", inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[Caller, Depends(guard)]
            ),
            inspect.Parameter(
                "payload",
                inspect.Parameter.KEYWORD_ONLY,
                annotation=body,
                default=None if optional else inspect.Parameter.empty,
            ),
        ],
        return_annotation=JSONResponse,
    )
    endpoint.__name__ = f"op_{op.name}"
    return endpoint


def json_body(request: Request) -> None:
    """Refuse a body not sent as JSON, naming the header: without it the body is not parsed,
    and the schema error that follows ("Input should be a valid dictionary") hides why."""
    headers = request.headers
    if headers.get("content-length", "0") == "0" and "transfer-encoding" not in headers:
        return  # no body: operations whose fields are all optional take none
    given = headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if given == "application/json" or given.endswith("+json"):
        return
    sent = f"Content-Type: {given}" if given else "no Content-Type header"
    raise ApiError(
        415,
        "UnsupportedMediaType",
        f"the body must be JSON sent with the header Content-Type: application/json "
        f"(this request has {sent})",
    )


def _description(op: Operation) -> str:
    traits = [
        name
        for name, on in (
            ("read-only", op.read_only),
            ("destructive", op.destructive),
            ("idempotent", op.idempotent),
        )
        if on
    ]
    return f"{op.summary}\n\nNeeds a `{op.profile}` token." + (
        f" {', '.join(traits).capitalize()}." if traits else ""
    )
