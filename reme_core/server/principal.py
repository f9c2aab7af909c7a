"""Who is calling, for the server layer: the auth middleware sets ``current_principal`` for each
request; the HTTP routes and the MCP tools read it.

The model is defined in :mod:`reme_core.service.principal`, below the server, because the
operations read it too (a review decision records its token) and the service layer must not
import the server. This module re-exports it so server code and older imports keep one name.
"""

from __future__ import annotations

from reme_core.service.principal import LOCAL_ADMIN, Principal, current_principal

__all__ = ["LOCAL_ADMIN", "Principal", "current_principal"]
