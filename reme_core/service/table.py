"""``OPERATIONS``: every operation a caller can perform on a workspace, by name.

The HTTP API, the MCP tools and the CLI's server client are all generated from this table: one
name, one pydantic input model, one handler over an open ``Reme``, one profile. An operation
added to a family module appears everywhere, with the same validation and the same errors.
"""

from __future__ import annotations

from reme_core.service.framework import Operation
from reme_core.service.history_ops import HISTORY_OPERATIONS
from reme_core.service.lifecycle_ops import LIFECYCLE_OPERATIONS
from reme_core.service.memory_ops import MEMORY_OPERATIONS
from reme_core.service.note_ops import NOTE_OPERATIONS
from reme_core.service.pipeline_ops import PIPELINE_OPERATIONS
from reme_core.service.proactive_ops import PROACTIVE_OPERATIONS
from reme_core.service.profiles import PROFILE_RANK
from reme_core.service.review_ops import REVIEW_OPERATIONS

_WORKSPACE_OPERATIONS: list[Operation] = sorted(
    [*NOTE_OPERATIONS, *HISTORY_OPERATIONS, *PIPELINE_OPERATIONS, *LIFECYCLE_OPERATIONS],
    key=lambda op: PROFILE_RANK[op.profile],
)
"""The note, history and pipeline operations by the profile they need (read, then write, then
admin; a stable sort keeps each family's order), the order the API docs and the MCP tool list
show them in. The proactive, memory and review families follow, each in its own order."""

OPERATIONS: dict[str, Operation] = {
    op.name: op
    for op in [
        *_WORKSPACE_OPERATIONS,
        *PROACTIVE_OPERATIONS,
        *MEMORY_OPERATIONS,
        *REVIEW_OPERATIONS,
    ]
}
"""Name -> operation. ``health`` is the server's own (no workspace, no token)."""
