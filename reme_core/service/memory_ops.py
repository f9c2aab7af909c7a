"""The memory-record operations: get, list, retrieve, add, update, summarize and delete the
personal, procedural and tool memories of one scope, through ``MemoryApi``."""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from reme_core.memory import MemoryApi, MemoryFilters, MemoryMessage, MemoryScope, MemoryType
from reme_core.runtime import Reme
from reme_core.schema.note import NoteStatus
from reme_core.service.framework import Input, Operation


class MemoryScopeInput(Input):
    """Exactly one scope: ``user_name`` (personal), ``task_name`` (procedural) or ``tool_name``
    (tool). Every memory operation sees only the records of the scope it names."""

    user_name: str | None = None
    task_name: str | None = None
    tool_name: str | None = None

    @model_validator(mode="after")
    def _one_scope(self) -> MemoryScopeInput:
        MemoryScope(user_name=self.user_name, task_name=self.task_name, tool_name=self.tool_name)
        return self

    def scope(self) -> dict[str, str | None]:
        return {
            "user_name": self.user_name,
            "task_name": self.task_name,
            "tool_name": self.tool_name,
        }


class MemoryAddInput(MemoryScopeInput):
    content: str = Field(min_length=1)
    when_to_use: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)
    sources: list[str] = Field(default_factory=list)
    memory_type: MemoryType | None = None


class MemoryIdInput(MemoryScopeInput):
    memory_id: str = Field(min_length=1)


class MemoryUpdateInput(MemoryIdInput):
    content: str | None = None
    when_to_use: str | None = None
    metadata: dict[str, Any] | None = None
    """Merged into the record's metadata; a null value removes that key."""
    sources: list[str] | None = None
    expected_hash: str | None = None


class MemoryDeleteInput(MemoryIdInput):
    expected_hash: str | None = None


class MemoryListInput(MemoryScopeInput):
    filters: MemoryFilters = Field(default_factory=MemoryFilters)
    sort_key: str = "updated"
    """created, updated, memory_id, when_to_use, content, or metadata.<key>."""
    reverse: bool = True
    limit: int | None = Field(None, ge=1, le=1000)


class MemoryRetrieveInput(MemoryScopeInput):
    query: str = Field(min_length=1)
    limit: int = Field(5, ge=1, le=50)
    min_score: float | None = Field(None, ge=0, le=1)
    statuses: list[NoteStatus] = Field(default_factory=lambda: ["active"], min_length=1)
    """Statuses to search; ``superseded`` adds replaced statements, each naming its newer
    record in ``record.superseded_by``."""


class MemorySummarizeInput(MemoryScopeInput):
    messages: list[MemoryMessage] = Field(min_length=1)
    sources: list[str] = Field(default_factory=list)
    """Links the new memories cite (the saved transcript, say)."""


def _memory_update(reme: Reme, given: MemoryUpdateInput) -> Any:
    return MemoryApi(reme).update(
        given.memory_id,
        **given.scope(),
        content=given.content,
        when_to_use=given.when_to_use,
        metadata=given.metadata,
        sources=given.sources,
        expected_hash=given.expected_hash,
    )


def _memory_list(reme: Reme, given: MemoryListInput) -> Any:
    return MemoryApi(reme).list(
        **given.scope(),
        filters=given.filters,
        sort_key=given.sort_key,
        reverse=given.reverse,
        limit=given.limit,
    )


MEMORY_OPERATIONS: list[Operation] = [
    Operation(
        "memory_get",
        "read",
        "One memory record by id, only if it belongs to the scope given.",
        MemoryIdInput,
        lambda r, i: MemoryApi(r).get(i.memory_id, **i.scope()),
        read_only=True,
        idempotent=True,
    ),
    Operation(
        "memory_list",
        "read",
        "A scope's memory records, filtered and sorted.",
        MemoryListInput,
        _memory_list,
        read_only=True,
        idempotent=True,
    ),
    Operation(
        "memory_retrieve",
        "read",
        "Search one scope's memory records (a user's, a task's or a tool's).",
        MemoryRetrieveInput,
        lambda r, i: MemoryApi(r).retrieve(
            i.query, **i.scope(), limit=i.limit, min_score=i.min_score, statuses=i.statuses
        ),
        read_only=True,
        idempotent=True,
    ),
    Operation(
        "memory_add",
        "write",
        "Add a personal, procedural or tool memory record to one scope.",
        MemoryAddInput,
        lambda r, i: MemoryApi(r).add(
            i.content,
            **i.scope(),
            when_to_use=i.when_to_use,
            metadata=i.metadata,
            sources=i.sources,
            memory_type=i.memory_type,
        ),
    ),
    Operation(
        "memory_update",
        "write",
        "Change a memory record's content, when_to_use, metadata or sources (new content keeps "
        "the old statement as a superseded record).",
        MemoryUpdateInput,
        _memory_update,
        idempotent=True,
    ),
    Operation(
        "memory_summarize",
        "write",
        "Extract a scope's memories from messages with the model; add new, refine existing.",
        MemorySummarizeInput,
        lambda r, i: MemoryApi(r).summarize(i.messages, **i.scope(), sources=i.sources),
    ),
    Operation(
        "memory_delete",
        "admin",
        "Delete one memory record of a scope (kept in the version history).",
        MemoryDeleteInput,
        lambda r, i: MemoryApi(r).delete(i.memory_id, **i.scope(), expected_hash=i.expected_hash),
        destructive=True,
    ),
    Operation(
        "memory_delete_all",
        "admin",
        "Delete every memory record of one scope (a scope is required).",
        MemoryScopeInput,
        lambda r, i: MemoryApi(r).delete_all(**i.scope()),
        destructive=True,
    ),
]
