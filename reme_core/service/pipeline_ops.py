"""The pipeline and maintenance operations: the built-in pipelines (auto_memory,
auto_memory_cc, auto_memory_codex, auto_resource, dream), any configured pipeline by name, the workspace's status
and a full reindex."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import Field

from reme_core.errors import NotFoundError
from reme_core.runtime import Reme
from reme_core.service.framework import EmptyInput, Input, Operation


class AutoMemoryInput(Input):
    session_id: str = Field(min_length=1)
    messages: list[dict[str, Any]] = Field(default_factory=list)
    date: str | None = None
    hint: str | None = None
    flush: bool | None = None
    """Summarise the session's pending turns now, however few (the step's min_pending_turns
    otherwise lets a call only save them)."""


class AutoMemoryCcInput(Input):
    session_id: str = Field(min_length=1)
    date: str | None = None
    hint: str | None = None
    flush: bool | None = None
    """As for auto_memory: a Claude Code SessionEnd hook sends true."""


class AutoMemoryCodexInput(Input):
    session_id: str = Field(min_length=1)
    """The Codex thread id (its notify program sends ``thread-id``)."""
    date: str | None = None
    hint: str | None = None
    flush: bool | None = None


class AutoResourceInput(Input):
    path: str | None = None
    """One file under ``resource/``; None reconciles the whole folder."""


class DreamInput(Input):
    date: str | None = None
    dry_run: bool = False


class PipelineRunInput(Input):
    pipeline: str = Field(min_length=1)
    """A configured pipeline (``pipelines.<name>``), e.g. auto_tag or a custom one."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Its parameters, as ``reme run --param`` gives them."""


def _run(reme: Reme, given: PipelineRunInput) -> Any:
    # Any configured pipeline, so `reme run NAME` works through a running server; admin only,
    # since a pipeline's steps may move or delete notes.
    if given.pipeline not in reme.settings.pipelines:
        known = ", ".join(sorted(reme.settings.pipelines))
        raise NotFoundError(f"pipeline {given.pipeline!r} is not configured (known: {known})")
    return reme.run(given.pipeline, given.params)


def _pipeline(name: str) -> Callable[[Reme, Input], Any]:
    def run(reme: Reme, given: Input) -> Any:
        if name not in reme.settings.pipelines:
            raise NotFoundError(f"pipeline {name!r} is not configured (pipelines.{name})")
        params = given.model_dump(exclude_none=True)
        if params.get("dry_run") is False:
            params.pop("dry_run")
        return reme.run(name, params)

    return run


def _reindex(reme: Reme, given: EmptyInput) -> Any:
    # Vectors are embedded in the background so the server keeps answering meanwhile.
    return reme.reindex(vectors="background")


PIPELINE_OPERATIONS: list[Operation] = [
    Operation(
        "status",
        "read",
        "Workspace status: files, chunks, index and vector state, problems.",
        EmptyInput,
        lambda r, i: r.status(),
        read_only=True,
        idempotent=True,
    ),
    Operation(
        "auto_memory",
        "write",
        "Save a session transcript and write or update its daily note.",
        AutoMemoryInput,
        _pipeline("auto_memory"),
    ),
    Operation(
        "auto_memory_cc",
        "write",
        "Ingest a Claude Code session by id (incremental) into its daily note.",
        AutoMemoryCcInput,
        _pipeline("auto_memory_cc"),
    ),
    Operation(
        "auto_memory_codex",
        "write",
        "Ingest a Codex session by thread id (incremental) into its daily note.",
        AutoMemoryCodexInput,
        _pipeline("auto_memory_codex"),
    ),
    Operation(
        "auto_resource",
        "write",
        "Turn files in resource/ into resource notes (one file, or the whole folder).",
        AutoResourceInput,
        _pipeline("auto_resource"),
    ),
    Operation(
        "dream",
        "admin",
        "Consolidate changed daily notes into digest nodes (verified verbs).",
        DreamInput,
        _pipeline("dream"),
        destructive=True,
    ),
    Operation(
        "reindex",
        "admin",
        "Rebuild every projection from the notes.",
        EmptyInput,
        _reindex,
        idempotent=True,
    ),
    Operation(
        "run",
        "admin",
        "Run any configured pipeline by name with its parameters (as `reme run`).",
        PipelineRunInput,
        _run,
        destructive=True,
    ),
]
