"""One operation call on behalf of a principal: the checks and bookkeeping every transport shares.

The HTTP routes and the MCP tools both call ``run_operation``, so a token gets the same answer,
the same refusal and the same error either way. It blocks (operations do file and index work):
call it from a worker thread in async code.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from reme_core.errors import RemeError
from reme_core.server.http_errors import ApiError
from reme_core.server.principal import Principal, current_principal
from reme_core.server.server_paths import hide_server_paths
from reme_core.server.workspaces import WorkspaceRegistry
from reme_core.service.operations import (
    OPERATIONS,
    Input,
    Operation,
    Profile,
    SearchInput,
    plain,
)

if TYPE_CHECKING:
    from reme_core.runtime import Reme

log = logging.getLogger("reme.server")

RECORDED = frozenset(
    {
        "auto_memory",
        "auto_memory_cc",
        "auto_memory_codex",
        "auto_resource",
        "dream",
        "run",
        "reindex",
        "memory_summarize",
        "proactive_run",
    }
)
"""Operations whose runs ``/status`` lists (pipelines and maintenance)."""
SERIAL = frozenset(
    {
        "auto_memory",
        "auto_memory_cc",
        "auto_memory_codex",
        "auto_resource",
        "dream",
        "run",
        "proactive_run",
    }
)
"""Pipelines: one run at a time per workspace (their usage counters assume it)."""
PIPELINE_OF = {"proactive_run": "proactive"}
"""Operations that run a pipeline of another name: they take that pipeline's lock, which its
scheduled job and ``run`` take too."""


def authorize(
    registry: WorkspaceRegistry, principal: Principal, workspace: str, needed: Profile
) -> None:
    """Refuse unless ``principal`` may use ``workspace`` with a profile of at least ``needed``.

    A token not bound to the workspace gets 403 whether or not the workspace exists, so a token
    cannot probe for names it was not given."""
    if not principal.may_use(workspace):
        raise ApiError(403, "Forbidden", f"this token may not use workspace {workspace!r}")
    if workspace not in registry.names:
        raise ApiError(
            404,
            "NotFoundError",
            f"no workspace named {workspace!r}; this server serves {', '.join(registry.names)}",
        )
    if not principal.may_call(needed):
        raise ApiError(
            403,
            "Forbidden",
            f"this needs a {needed!r} token (or higher); this token's profile is "
            f"{principal.profile!r}",
        )


def run_operation(
    registry: WorkspaceRegistry,
    principal: Principal,
    workspace: str,
    name: str,
    payload: dict[str, Any] | Input,
    *,
    include_shared: bool = False,
) -> Any:
    """Authorize, run and record one operation; returns JSON-ready data."""
    op = OPERATIONS.get(name)
    if op is None:
        raise ApiError(404, "NotFoundError", f"no operation {name!r}")
    authorize(registry, principal, workspace, op.profile)
    given = (
        payload if isinstance(payload, op.input_model) else op.input_model.model_validate(payload)
    )
    reset = current_principal.set(principal)
    try:
        # The handler is called here, not in a helper (``given`` is validated: no op.call), and
        # given the input resolved on this workspace: a search goes straight to the runtime.
        with _leased(registry, workspace, op, given) as reme:
            result = plain(op.handler(reme, given.resolved(reme)))
        if name == "search":
            assert isinstance(given, SearchInput)
            return _with_shared(registry, principal, workspace, given, result, include_shared)
        if name == "status":
            result["server"] = registry.server_status(workspace)
            result["degraded"] = result["server"]["degraded"]
            if principal.profile != "admin":
                result = hide_server_paths(result, str(registry.root(workspace)))
        return result
    finally:
        current_principal.reset(reset)


@contextmanager
def _leased(
    registry: WorkspaceRegistry, workspace: str, op: Operation, given: Input
) -> Iterator[Reme]:
    """The open workspace for one call of ``op`` (its pipeline lock held for a serial one),
    the call's outcome recorded for ``/status`` as it leaves the block."""
    started = time.time()
    # `run` takes the named pipeline's lock, so it never overlaps an API or scheduled run of it.
    key = getattr(given, "pipeline", op.name) if op.name == "run" else op.name
    key = PIPELINE_OF.get(key, key)
    serial = registry.serial(workspace, key) if op.name in SERIAL else nullcontext()
    try:
        with serial, registry.use(workspace) as reme:
            yield reme
    except Exception as exc:
        if op.name in RECORDED:
            registry.record_run(workspace, op.name, started, exc)
        elif not isinstance(exc, RemeError | ValidationError):
            # Not the caller's mistake nor the configuration's: a server fault.
            registry.record_error(workspace, op.name, exc)
            log.exception("operation %s on %s failed", op.name, workspace)
        raise
    if op.name in RECORDED:
        registry.record_run(workspace, op.name, started)


def _with_shared(
    registry: WorkspaceRegistry,
    principal: Principal,
    workspace: str,
    given: SearchInput,
    own: dict[str, Any],
    include_shared: bool,
) -> dict[str, Any]:
    """The workspace's search ``own``, and with ``include_shared`` the shared workspaces this
    token may use searched too ("project plus global" recall); hits are merged by score, each
    naming its workspace. A shared workspace that fails is reported in ``degraded``, not raised:
    the caller's own results still come back."""
    op = OPERATIONS["search"]
    searched = [workspace]
    extra: list[tuple[str, dict[str, Any]]] = []
    degraded = [*own["degraded"], *registry.degraded(workspace)]
    if include_shared:
        for name in registry.settings.server.shared_workspaces:
            if name == workspace or not principal.may_use(name):
                continue
            try:
                with _leased(registry, name, op, given) as reme:
                    found = plain(op.handler(reme, given.resolved(reme)))
            except Exception as exc:
                degraded.append(f"{name}: search failed: {type(exc).__name__}: {exc}")
                continue
            searched.append(name)
            extra.append((name, found))
            degraded += [f"{name}: {d}" for d in [*found["degraded"], *registry.degraded(name)]]
    hits = _tagged(own["hits"], workspace)
    linked = _tagged(own["linked"], workspace)
    arms = list(own["arms"])
    for name, found in extra:
        hits += _tagged(found["hits"], name)
        linked += _tagged(found["linked"], name)
        arms += [a for a in found["arms"] if a not in arms]
    # Stable sort: on equal scores the caller's own workspace comes first.
    hits.sort(key=lambda hit: -hit["score"])
    limit = given.limit or registry.settings.search.limit
    return {
        **own,
        "hits": hits[:limit],
        "linked": linked,
        "arms": arms,
        "degraded": degraded,
        "workspaces": searched,
        # "Nothing relevant" only when no workspace searched found anything relevant.
        "no_match": all(found["no_match"] for found in [own, *(f for _, f in extra)]),
        "meaning_only": all(found["meaning_only"] for found in [own, *(f for _, f in extra)]),
    }


def _tagged(items: list[dict[str, Any]], workspace: str) -> list[dict[str, Any]]:
    return [{**item, "workspace": workspace} for item in items]
