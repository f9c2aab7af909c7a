"""Every operation a caller can perform on a workspace, defined once.

The HTTP API, the MCP tools and the CLI's server client are all generated from ``OPERATIONS``:
one name, one pydantic input model, one handler over an open ``Reme``, one profile. A new
operation added here appears everywhere, with the same validation and the same errors.

Profiles nest: ``read`` < ``write`` < ``admin``. A token may call an operation when its profile
is at least the operation's.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from reme_core.errors import ConfigError, NotFoundError, PathOutsideWorkspaceError
from reme_core.memory import MemoryApi, MemoryFilters, MemoryMessage, MemoryScope, MemoryType
from reme_core.runtime import Reme
from reme_core.schema import SearchFilters
from reme_core.workspace.paths import is_internal

Profile = Literal["read", "write", "admin"]
PROFILE_RANK: dict[str, int] = {"read": 0, "write": 1, "admin": 2}


def allows(token_profile: str, needed: str) -> bool:
    """Whether a token of ``token_profile`` may call an operation needing ``needed``."""
    return PROFILE_RANK[token_profile] >= PROFILE_RANK[needed]


class Input(BaseModel):
    """Operation inputs: unknown fields are an error (``allowed_paths`` included: the server
    owns confinement, so a caller that sends it is refused rather than ignored)."""

    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class Operation:
    name: str
    profile: Profile
    summary: str
    input_model: type[Input]
    handler: Callable[[Reme, Any], Any]
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False

    def call(self, reme: Reme, payload: dict[str, Any] | Input) -> Any:
        """Validate ``payload`` and run the handler; returns JSON-ready data."""
        given = (
            payload
            if isinstance(payload, self.input_model)
            else self.input_model.model_validate(payload)
        )
        return plain(self.handler(reme, given))


def plain(value: Any) -> Any:
    """``value`` as JSON-ready data: pydantic models dumped, lists and dicts walked."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


# -- read ----------------------------------------------------------------------------------


class SearchInput(Input):
    query: str = Field(min_length=1)
    limit: int | None = Field(None, ge=1, le=200)
    min_score: float | None = Field(None, ge=0, le=1)
    expand: bool | None = None
    paths: list[str] | None = None
    tags: list[str] | None = None
    tag_mode: Literal["any", "all"] = "any"
    since: str | None = None
    until: str | None = None
    statuses: list[Literal["active", "archived", "superseded"]] | None = None


def _search(reme: Reme, given: SearchInput) -> Any:
    filters = {
        k: v
        for k, v in given.model_dump(
            include={"paths", "tags", "tag_mode", "since", "until", "statuses"}
        ).items()
        if v is not None
    }
    filters.setdefault("statuses", list(reme.settings.search.statuses))
    return reme.search(
        given.query,
        limit=given.limit,
        min_score=given.min_score,
        filters=SearchFilters(**filters),
        expand=given.expand,
    )


class ReadInput(Input):
    path: str
    start_line: int = Field(1, ge=1)
    end_line: int | None = Field(None, ge=1)


class PathInput(Input):
    path: str


class ListInput(Input):
    path: str = ""
    recursive: bool = False


class TraverseInput(Input):
    path: str
    depth: int = Field(1, ge=1, le=3)
    """Hops from ``path``; links are followed both ways."""
    max_nodes: int = Field(50, ge=1, le=500)


def _traverse(reme: Reme, given: TraverseInput) -> dict[str, Any]:
    """Bounded breadth-first walk over the link graph (outbound and inbound links)."""
    if reme.graph is None:
        raise ConfigError("components.graph is null: link tracking is off")
    start = reme.files.stat(given.path).path  # confined, and the path must exist
    seen = {start: 0}
    edges: list[dict[str, Any]] = []
    queue = deque([start])
    truncated = False
    while queue:
        node = queue.popleft()
        if seen[node] >= given.depth:
            continue
        links = reme.links(node)
        for direction, found in (("outbound", links["outbound"]), ("inbound", links["inbound"])):
            for link in found:
                other = link.target if direction == "outbound" else link.source
                if other is None:
                    continue  # a dangling link: reported by `links`, not walked
                edges.append({"from": link.source, "to": link.target, "raw": link.raw})
                if other not in seen:
                    if len(seen) >= given.max_nodes:
                        truncated = True
                        continue
                    seen[other] = seen[node] + 1
                    queue.append(other)
    unique = {(e["from"], e["to"], e["raw"]): e for e in edges}
    return {
        "start": start,
        "nodes": [{"path": p, "depth": d} for p, d in seen.items()],
        "edges": list(unique.values()),
        "truncated": truncated,
    }


def _links(reme: Reme, given: PathInput) -> dict[str, Any]:
    path = reme.files.stat(given.path).path  # confined, and the path must exist
    return {"path": path, **reme.links(path)}


RUN_ID = Field(pattern=r"^[0-9a-fA-F]{4,40}$", description="A history entry's id (`history`).")


class HistoryInput(Input):
    limit: int = Field(20, ge=1, le=500)
    path: str | None = None
    """Only the entries that changed this file (it may since have been deleted)."""


def _history(reme: Reme, given: HistoryInput) -> dict[str, Any]:
    path = None
    if given.path is not None:
        path = reme.paths.relative(given.path)
        if path == "" or is_internal(path):
            raise PathOutsideWorkspaceError(f"path {given.path!r} names no file of the workspace")
    return {"path": path, "entries": reme.history.entries(given.limit, path=path)}


class RunInput(Input):
    run: str = RUN_ID


def _history_show(reme: Reme, given: RunInput) -> dict[str, Any]:
    plan = reme.revert_preview(given.run)
    diff, truncated = reme.history.diff(given.run)
    return {"run": given.run, "plan": plan, "diff": diff, "truncated": truncated}


class RevertInput(Input):
    run: str = RUN_ID
    dry_run: bool = False
    """Only say what the revert would delete, modify and restore."""
    confirm: bool = False
    """Needed when the revert deletes files (a dry run lists them first)."""
    force: bool = False
    """Needed to revert a snapshot of changes made outside reme (it undoes those edits)."""


def _revert(reme: Reme, given: RevertInput) -> dict[str, Any]:
    if given.dry_run:
        return {"run": given.run, "dry_run": True, "plan": reme.revert_preview(given.run)}
    files = reme.revert(given.run, force=given.force, confirm=given.confirm)
    return {"run": given.run, "dry_run": False, "files": files}


# -- write ---------------------------------------------------------------------------------


class WriteInput(Input):
    path: str
    content: str
    expected_hash: str | None = None
    create_only: bool = False
    """Refuse (conflict) when the file already exists: a new note never replaces one."""


class EditInput(Input):
    path: str
    old: str = Field(min_length=1)
    new: str
    expected_count: int = Field(1, ge=1)
    expected_hash: str | None = None


class FrontmatterInput(Input):
    path: str
    set: dict[str, Any] = Field(default_factory=dict)
    remove: list[str] = Field(default_factory=list)
    expected_hash: str | None = None


class MoveInput(Input):
    src: str
    dst: str
    expected_hash: str | None = None


class DeleteInput(Input):
    path: str
    expected_hash: str | None = None


# -- pipelines and maintenance -------------------------------------------------------------


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


class AutoResourceInput(Input):
    path: str | None = None
    """One file under ``resource/``; None reconciles the whole folder."""


class DreamInput(Input):
    date: str | None = None
    dry_run: bool = False


class EmptyInput(Input):
    pass


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


# -- memory records ------------------------------------------------------------------------


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
            i.query, **i.scope(), limit=i.limit, min_score=i.min_score
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
        "Change a memory record's content, when_to_use, metadata or sources.",
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


# -- review queue --------------------------------------------------------------------------


ProposalStatusFilter = Literal["pending", "approved", "rejected", "stale", "all"]
ProposalVerbName = Literal["CREATE", "CORROBORATE", "REFINE", "CORRECT", "TAG", "MEMORY"]
PROPOSAL_ID = Field(
    min_length=4, max_length=12, pattern=r"^[0-9a-fA-F]+$", description="A proposal id or prefix."
)


class ReviewListInput(Input):
    status: ProposalStatusFilter = "pending"
    verb: ProposalVerbName | None = None
    pipeline: str | None = Field(None, max_length=200)
    target: str | None = Field(None, max_length=1024)
    """Only proposals for this note (its workspace path, as proposals name it)."""
    limit: int | None = Field(None, ge=1, le=1000)


class ReviewIdInput(Input):
    id: str = PROPOSAL_ID


class ReviewSelection(Input):
    """Proposals by id, or every pending one of a verb and/or pipeline (not both ways)."""

    ids: list[str] = Field(default_factory=list, max_length=1000)
    verb: ProposalVerbName | None = None
    pipeline: str | None = Field(None, max_length=200)
    by: str | None = Field(None, max_length=200)
    """Who decides (recorded); default: the token's id over the server, else the local user."""

    @model_validator(mode="after")
    def _one_way(self) -> ReviewSelection:
        if self.ids and (self.verb is not None or self.pipeline is not None):
            raise ValueError("give ids, or verb/pipeline to select every pending one; not both")
        if not self.ids and self.verb is None and self.pipeline is None:
            raise ValueError("give ids, or verb/pipeline to select every pending one")
        return self


class ReviewRejectInput(ReviewSelection):
    reason: str = Field(min_length=1, max_length=2000)
    """Why the change is wrong: kept with the proposal, and what the pipeline remembers."""


def _decider(by: str | None) -> str:
    """``by``, with the calling token's id when served; the local user in-process."""
    from reme_core.review.api import local_user
    from reme_core.server.principal import current_principal  # it imports this module

    principal = current_principal.get()
    if principal is None:
        return by or local_user()
    token = f"token:{principal.token_id}"
    return f"{by} ({token})" if by else token


REVIEW_OPERATIONS: list[Operation] = [
    Operation(
        "review_list",
        "read",
        "Proposals of pipelines set to review: queue (pending by default), oldest first.",
        ReviewListInput,
        lambda r, i: r.review.list(
            i.status, verb=i.verb, pipeline=i.pipeline, target=i.target, limit=i.limit
        ),
        read_only=True,
        idempotent=True,
    ),
    Operation(
        "review_show",
        "read",
        "One proposal in full: the diff, the proposed content, the verifier's checks, status.",
        ReviewIdInput,
        lambda r, i: r.review.show(i.id),
        read_only=True,
        idempotent=True,
    ),
    Operation(
        "review_approve",
        "admin",
        "Apply proposals (by id, or every pending one of a verb): each verified again against "
        "the current note, written, recorded in the history and indexed; stale ones refused.",
        ReviewSelection,
        lambda r, i: r.review.approve(i.ids, verb=i.verb, pipeline=i.pipeline, by=_decider(i.by)),
        destructive=True,
    ),
    Operation(
        "review_reject",
        "write",
        "Reject proposals with a reason; the pipeline does not propose the same change again.",
        ReviewRejectInput,
        lambda r, i: r.review.reject(
            i.ids, reason=i.reason, verb=i.verb, pipeline=i.pipeline, by=_decider(i.by)
        ),
    ),
]
"""Approving applies what a pipeline decided, with dream's power (admin); rejecting changes no
note, only what the pipeline will propose (write)."""


def _reindex(reme: Reme, given: EmptyInput) -> Any:
    # Vectors are embedded in the background so the server keeps answering meanwhile.
    return reme.reindex(vectors="background")


OPERATIONS: dict[str, Operation] = {
    op.name: op
    for op in [
        Operation(
            "search",
            "read",
            "Hybrid search over the notes (BM25 + vectors, filters, one hop of links).",
            SearchInput,
            _search,
            read_only=True,
            idempotent=True,
        ),
        Operation(
            "read",
            "read",
            "Read a note or text file, or a line range of it.",
            ReadInput,
            lambda r, i: r.files.read(i.path, i.start_line, i.end_line),
            read_only=True,
            idempotent=True,
        ),
        Operation(
            "list",
            "read",
            "List a folder of the workspace.",
            ListInput,
            lambda r, i: r.files.ls(i.path, i.recursive),
            read_only=True,
            idempotent=True,
        ),
        Operation(
            "stat",
            "read",
            "A file's size, hash, frontmatter and dates.",
            PathInput,
            lambda r, i: r.files.stat(i.path),
            read_only=True,
            idempotent=True,
        ),
        Operation(
            "traverse",
            "read",
            "Walk the link graph from a note, both directions, a bounded number of hops.",
            TraverseInput,
            _traverse,
            read_only=True,
            idempotent=True,
        ),
        Operation(
            "links",
            "read",
            "A note's links both ways: outbound (resolved, missing or ambiguous) and inbound.",
            PathInput,
            _links,
            read_only=True,
            idempotent=True,
        ),
        Operation(
            "history",
            "read",
            "The workspace's change history, newest first (the baseline, pipeline runs, each "
            "write, edit, move and delete, snapshots, reverts), or one file's.",
            HistoryInput,
            _history,
            read_only=True,
            idempotent=True,
        ),
        Operation(
            "history_show",
            "read",
            "One history entry: its diff and what reverting it would delete, modify, restore.",
            RunInput,
            _history_show,
            read_only=True,
            idempotent=True,
        ),
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
            "write",
            "write",
            "Create or replace a Markdown note atomically (expected_hash guards lost updates).",
            WriteInput,
            lambda r, i: r.files.write(
                i.path, i.content, expected_hash=i.expected_hash, create_only=i.create_only
            ),
            idempotent=True,
        ),
        Operation(
            "edit",
            "write",
            "Replace an exact span of a note.",
            EditInput,
            lambda r, i: r.files.edit(
                i.path, i.old, i.new, expected_count=i.expected_count, expected_hash=i.expected_hash
            ),
        ),
        Operation(
            "frontmatter",
            "write",
            "Set or remove frontmatter keys, keeping everything else as written.",
            FrontmatterInput,
            lambda r, i: r.files.update_frontmatter(
                i.path, i.set, i.remove, expected_hash=i.expected_hash
            ),
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
            "auto_resource",
            "write",
            "Turn files in resource/ into resource notes (one file, or the whole folder).",
            AutoResourceInput,
            _pipeline("auto_resource"),
        ),
        Operation(
            "move",
            "admin",
            "Move a note and rewrite the links that point at it.",
            MoveInput,
            lambda r, i: r.files.move(i.src, i.dst, expected_hash=i.expected_hash),
            destructive=True,
        ),
        Operation(
            "delete",
            "admin",
            "Delete a note (reports notes whose links now dangle).",
            DeleteInput,
            lambda r, i: r.files.delete(i.path, expected_hash=i.expected_hash),
            destructive=True,
        ),
        Operation(
            "revert",
            "admin",
            "Undo one history entry as a new entry (dry_run previews; deleting files needs "
            "confirm, a snapshot force).",
            RevertInput,
            _revert,
            destructive=True,
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
        *MEMORY_OPERATIONS,
        *REVIEW_OPERATIONS,
    ]
}
"""Name -> operation. ``health`` is the server's own (no workspace, no token)."""
