"""Errors as HTTP: one JSON shape, ``{"error": {"type", "message"}}``, and one status per error.

``type`` is the exception's class name, so a client can raise the same RemeError subclass the
in-process call would have raised (and the CLI exits with the same code either way).
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from starlette.responses import JSONResponse

from reme_core import errors
from reme_core.pipelines.engine import PipelineError
from reme_core.workspace.history import HistoryError

# Most specific first: the first isinstance match wins.
_STATUS: list[tuple[type[Exception], int]] = [
    (errors.PathOutsideWorkspaceError, 403),
    (errors.NotFoundError, 404),
    (errors.ConflictError, 409),
    (errors.EditError, 409),
    (HistoryError, 409),
    (errors.UnsupportedFileError, 422),
    (errors.FrontmatterError, 422),
    (errors.WorkspaceError, 400),
    (errors.SearchError, 400),
    # The server cannot do it as configured, or a model or store it depends on failed: the
    # request itself was fine, so a 4xx would blame the caller.
    (errors.ConfigError, 503),
    (errors.StoreBusyError, 503),
    (errors.EmbeddingError, 503),
    (errors.LlmError, 503),
    (errors.RemeError, 400),
]


class ApiError(Exception):
    """An error the server itself raises (auth, profile, workspace choice), with its status."""

    def __init__(self, status: int, kind: str, message: str):
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message


def status_for(exc: Exception) -> int:
    """The HTTP status for an error raised by an operation (an error class may name its own
    with an ``http_status`` attribute)."""
    own = getattr(exc, "http_status", None)
    if isinstance(own, int):
        return own
    if isinstance(exc, PipelineError) and isinstance(exc.__cause__, Exception):
        return status_for(exc.__cause__)  # "step X failed: <the model timed out>" is the cause's
    for cls, status in _STATUS:
        if isinstance(exc, cls):
            return status
    return 500


def error_body(kind: str, message: str) -> dict[str, Any]:
    return {"error": {"type": kind, "message": message}}


def error_response(
    status: int, kind: str, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(error_body(kind, message), status_code=status, headers=headers)


def validation_message(exc: ValidationError | Any) -> str:
    """One line per invalid field, naming it; ``allowed_paths`` gets its reason."""
    lines = []
    for item in exc.errors():
        loc = [str(part) for part in item.get("loc", ()) if part != "body"]
        field = ".".join(loc) or "body"
        if item.get("type") == "json_invalid":
            lines.append(
                f"body: not valid JSON ({item.get('ctx', {}).get('error', 'parse error')})"
            )
        elif field == "allowed_paths" or field.endswith(".allowed_paths"):
            lines.append(
                "allowed_paths: path confinement is set by the server, not by callers; "
                "remove the field"
            )
        else:
            lines.append(f"{field}: {item.get('msg', 'invalid')}")
    return "; ".join(lines) or "invalid request"
