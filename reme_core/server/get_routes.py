"""``GET /api/v1/<operation>`` for the read operations a person or a session-start hook fetches
with a plain GET (``GET /api/v1/proactive``): the query string is the input (beside
``workspace``), validated by the operation's own model, and the answer is the POST route's."""

from __future__ import annotations

import inspect
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse

from reme_core.server.dispatch import authorize, run_operation
from reme_core.server.http_errors import ApiError
from reme_core.server.workspaces import WorkspaceRegistry
from reme_core.service.operations import OPERATIONS

GET_OPERATIONS = ("proactive",)
"""Operations also served by GET: read-only, every input field optional and a plain value."""


def get_router(registry: WorkspaceRegistry, caller: Any) -> APIRouter:
    """The GET routes; ``caller`` is the POST routes' dependency (who calls, on which
    workspace)."""
    router = APIRouter(prefix="/api/v1")
    for name in GET_OPERATIONS:
        op = OPERATIONS.get(name)
        if op is None or not op.read_only:
            continue
        router.add_api_route(
            f"/{name}",
            _endpoint(registry, caller, name),
            methods=["GET"],
            name=f"{name}_get",
            operation_id=f"{name}_get",
            summary=op.summary,
            tags=[op.profile],
        )
    return router


def _endpoint(registry: WorkspaceRegistry, caller: Any, name: str) -> Any:
    op = OPERATIONS[name]

    def answer(request: Request, who: Any) -> JSONResponse:
        authorize(registry, who.principal, who.workspace, op.profile)
        given = {k: v for k, v in request.query_params.items() if k != "workspace"}
        try:
            payload = op.input_model.model_validate(given)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(map(str, first["loc"])) or "query"
            raise ApiError(422, "ValidationError", f"{where}: {first['msg']}") from None
        return JSONResponse(run_operation(registry, who.principal, who.workspace, name, payload))

    async def endpoint(request: Request, who: Any) -> JSONResponse:
        return await run_in_threadpool(answer, request, who)

    # Real types, not the strings this module's annotations are: FastAPI reads the signature.
    endpoint.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter("request", inspect.Parameter.KEYWORD_ONLY, annotation=Request),
            inspect.Parameter(
                "who", inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[Any, Depends(caller)]
            ),
        ],
        return_annotation=JSONResponse,
    )
    endpoint.__name__ = f"get_{name}"
    return endpoint
