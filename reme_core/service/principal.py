"""Who is calling: the authenticated token's profile and workspaces, for the current request.

The server's auth middleware sets ``current_principal`` for each request; the HTTP routes and
the MCP tools read it (the MCP tool list a client sees depends on its profile), and so do the
operations that record who acted (a review decision). It lives in the service layer so that
those operations need not import the server; ``reme_core.server.principal`` re-exports it.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass

from reme_core.service.profiles import Profile, allows


@dataclass(frozen=True)
class Principal:
    token_id: str
    """The token's public id (never the secret), for logs and `reme token list`."""
    profile: Profile
    workspaces: frozenset[str]
    """Workspace names this token may use; ``"*"`` means all."""

    def may_use(self, workspace: str) -> bool:
        return "*" in self.workspaces or workspace in self.workspaces

    def may_call(self, needed: Profile) -> bool:
        return allows(self.profile, needed)


LOCAL_ADMIN = Principal(token_id="local", profile="admin", workspaces=frozenset({"*"}))
"""In-process callers (the CLI without a server, `reme mcp` over stdio) act as the owner."""

current_principal: ContextVar[Principal | None] = ContextVar("reme_principal", default=None)
