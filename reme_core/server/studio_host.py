"""The server's side of the studio: the ``StudioHost`` that ``create_app`` mounts the studio with.

The studio declares what it needs (``reme_core.studio.site.StudioHost``) and the server hands it
this, so the studio, like the HTTP routes and the MCP tools, runs every read and change through
``run_operation`` and shows its errors with the API's statuses, without importing the server.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from reme_core.errors import RemeError
from reme_core.server.dispatch import run_operation
from reme_core.server.http_errors import ApiError, status_for, validation_message
from reme_core.server.security import url_login_refusal
from reme_core.server.workspaces import DEFAULT, WorkspaceRegistry
from reme_core.service.principal import Principal


class ServerStudioHost:
    """The dispatcher, error statuses and login-URL check of ``reme serve``, for the studio."""

    default_workspace = DEFAULT

    def run(
        self,
        registry: WorkspaceRegistry,
        principal: Principal,
        workspace: str,
        name: str,
        payload: dict[str, Any],
    ) -> Any:
        """Run operation ``name`` as ``principal`` on ``workspace`` (blocks)."""
        return run_operation(registry, principal, workspace, name, payload)

    def failure(self, exc: Exception) -> tuple[int, str, str] | None:
        """A refusal as the server raised it, a payload the operation rejected (422), or an
        operation's own error, each with the status the API gives it; None otherwise."""
        if isinstance(exc, ApiError):
            return exc.status, exc.kind, exc.message
        if isinstance(exc, ValidationError):
            return 422, "ValidationError", validation_message(exc)
        if isinstance(exc, RemeError):
            return status_for(exc), type(exc).__name__, str(exc)
        return None

    def url_login_refusal(self, headers: Mapping[str, str]) -> str | None:
        """Why a token in this request's URL may not log in (``security.url_login_refusal``)."""
        return url_login_refusal(headers)


STUDIO_HOST = ServerStudioHost()
