"""``MemoryApi``: personal, procedural and tool memories of one open workspace.

    api = MemoryApi(reme)
    added = api.add("Prefers 4-space indentation.", user_name="alice", when_to_use="formatting")
    api.retrieve("indentation", user_name="alice")
    api.summarize(messages, tool_name="web_search")

Every call names exactly one scope (``user_name``, ``task_name`` or ``tool_name``) and sees only
that scope's records: reads re-check each record's own frontmatter, whatever the folder or the
search index say. Each change is one commit in the workspace's version history.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from reme_core.components import LlmUsage
from reme_core.errors import ConfigError, WorkspaceError
from reme_core.memory import note
from reme_core.memory.commits import Change, changing
from reme_core.memory.layout import record_path, scope_folder
from reme_core.memory.models import (
    MemoryChange,
    MemoryDeletion,
    MemoryFilters,
    MemoryHit,
    MemoryList,
    MemoryMessage,
    MemoryRecord,
    MemoryRetrieval,
    MemoryScope,
    MemorySummary,
    MemoryType,
    SkippedDraft,
    check_memory_id,
    check_sort_key,
    check_statuses,
)
from reme_core.memory.records import (
    Clock,
    check_current,
    new_record,
    record_fields,
    rewritten,
    same_content,
    superseded_copy,
)
from reme_core.memory.store import Loaded, MemoryStore, check_expected
from reme_core.memory.summarize import PROMPTS, extract
from reme_core.pipelines.prompts import load_prompts
from reme_core.schema import SearchFilters
from reme_core.schema.note import NoteStatus

if TYPE_CHECKING:
    from reme_core.runtime import Reme

MAX_RETRIEVE = 50


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class MemoryApi:
    def __init__(self, reme: Reme, *, clock: Clock | None = None):
        self.reme = reme
        self.store = MemoryStore(reme)
        self.clock = clock or _now

    # -- writes ------------------------------------------------------------------------------

    def add(
        self,
        content: str,
        *,
        user_name: str | None = None,
        task_name: str | None = None,
        tool_name: str | None = None,
        when_to_use: str = "",
        metadata: dict[str, Any] | None = None,
        sources: Sequence[str] = (),
        memory_type: MemoryType | None = None,
    ) -> MemoryChange:
        """Write a new record; ``memory_type``, when given, must be the scope's."""
        scope = MemoryScope.of(user_name, task_name, tool_name)
        if memory_type is not None and memory_type != scope.memory_type:
            raise WorkspaceError(
                f"memory_type {memory_type!r} does not match the scope {scope.key} "
                f"(a {scope.memory_type} memory)"
            )
        fields = record_fields(scope, content, when_to_use, metadata or {}, sources)
        with changing(self.reme, scope) as change:
            record = self._create(scope, change, **fields)
            result = MemoryChange(action="added", record=record)
            change.commit(f"add {record.memory_id}", result)
        return result

    def update(
        self,
        memory_id: str,
        *,
        user_name: str | None = None,
        task_name: str | None = None,
        tool_name: str | None = None,
        content: str | None = None,
        when_to_use: str | None = None,
        metadata: dict[str, Any] | None = None,
        sources: Sequence[str] | None = None,
        expected_hash: str | None = None,
    ) -> MemoryChange:
        """Change the fields given. ``metadata`` is merged key by key (a null value removes a
        key); ``sources`` replaces the list. Nothing to change leaves the note (and its
        ``updated``) as it was.

        New content replaces a statement, so the old one is kept, not overwritten: as record
        ``<id>-v<N>`` (``status: superseded``, ``superseded_by`` the record), which listings and
        retrieval leave out unless asked for superseded records. A superseded record itself is
        not updated (its newer version is)."""
        scope = MemoryScope.of(user_name, task_name, tool_name)
        check_memory_id(memory_id)
        with changing(self.reme, scope) as change:
            current = self.store.find(scope, memory_id)
            check_expected(current.record, expected_hash)
            check_current(current.record)
            merged = {**current.record.metadata, **(metadata or {})}
            fields = record_fields(
                scope,
                current.record.content if content is None else content,
                current.record.when_to_use if when_to_use is None else when_to_use,
                {k: v for k, v in merged.items() if v is not None},
                current.record.sources if sources is None else sources,
            )
            rewrite = self._rewrite(current, change, **fields)
            record, kept = rewrite or (None, None)
            result = MemoryChange(
                action="unchanged" if record is None else "updated",
                record=record or current.record,
                superseded=kept,
            )
            if record is not None:
                change.commit(f"update {memory_id}", result)
        return result

    def delete(
        self,
        memory_id: str,
        *,
        user_name: str | None = None,
        task_name: str | None = None,
        tool_name: str | None = None,
        expected_hash: str | None = None,
    ) -> MemoryChange:
        """Delete one record and its superseded versions (journalled, and undoable with
        ``reme revert``)."""
        scope = MemoryScope.of(user_name, task_name, tool_name)
        check_memory_id(memory_id)
        with changing(self.reme, scope) as change:
            current = self.store.find(scope, memory_id)
            check_expected(current.record, expected_hash)
            # Its superseded versions go with it: kept, they would name a record that is gone
            # (the version history keeps them, and a revert brings them back together).
            versions = [
                loaded.record
                for loaded in self.store.records(scope)[0]
                if loaded.record.status == "superseded" and loaded.record.superseded_by == memory_id
            ]
            for old in [current.record, *versions]:
                self.store.remove(old)
                change.verbs.append(f"DELETE {old.path}")
            result = MemoryChange(
                action="deleted",
                record=current.record,
                versions=[v.memory_id for v in versions],
            )
            change.commit(f"delete {memory_id}", result)
        return result

    def delete_all(
        self,
        *,
        user_name: str | None = None,
        task_name: str | None = None,
        tool_name: str | None = None,
    ) -> MemoryDeletion:
        """Delete every record of one scope. There is no "all scopes": without a scope this is
        refused, so a missing argument can never empty the memory."""
        scope = MemoryScope.of(user_name, task_name, tool_name)
        with changing(self.reme, scope) as change:
            found, _ = self.store.records(scope)
            result = MemoryDeletion()
            for loaded in found:
                self.store.remove(loaded.record)
                change.verbs.append(f"DELETE {loaded.record.path}")
                result.deleted.append(loaded.record.memory_id)
                result.paths.append(loaded.record.path)
            if found:
                change.commit(f"delete_all: {len(found)} record(s)", result)
        return result

    # -- reads -------------------------------------------------------------------------------

    def get(
        self,
        memory_id: str,
        *,
        user_name: str | None = None,
        task_name: str | None = None,
        tool_name: str | None = None,
    ) -> MemoryRecord:
        """Record ``memory_id``, only if it belongs to the scope given (NotFoundError else)."""
        scope = MemoryScope.of(user_name, task_name, tool_name)
        return self.store.find(scope, check_memory_id(memory_id)).record

    def list(
        self,
        *,
        user_name: str | None = None,
        task_name: str | None = None,
        tool_name: str | None = None,
        filters: MemoryFilters | None = None,
        sort_key: str = "updated",
        reverse: bool = True,
        limit: int | None = None,
    ) -> MemoryList:
        """The scope's records passing ``filters``, sorted (newest update first by default);
        records without the sort key (``metadata.<key>``) come last either way."""
        scope = MemoryScope.of(user_name, task_name, tool_name)
        check_sort_key(sort_key)
        if limit is not None and limit < 1:
            raise WorkspaceError(f"limit must be 1 or more, got {limit}")
        found, problems = self.store.records(scope)
        wanted = filters or MemoryFilters()
        kept = [loaded.record for loaded in found if _passes(loaded.record, wanted)]
        ordered = _sorted(kept, sort_key, reverse)
        return MemoryList(
            records=ordered[:limit] if limit is not None else ordered,
            total=len(ordered),
            problems=problems,
        )

    def retrieve(
        self,
        query: str,
        *,
        user_name: str | None = None,
        task_name: str | None = None,
        tool_name: str | None = None,
        limit: int = 5,
        min_score: float | None = None,
        statuses: Sequence[NoteStatus] = ("active",),
    ) -> MemoryRetrieval:
        """Search the scope's records for ``query``, best first. The search is restricted to the
        scope's folder, and each hit's note is read and checked against the scope. Only active
        records unless ``statuses`` says otherwise; a superseded hit names its newer record in
        ``record.superseded_by``."""
        scope = MemoryScope.of(user_name, task_name, tool_name)
        wanted = check_statuses(statuses)
        if not query.strip():
            raise WorkspaceError("query is empty: say what to look for")
        if not 1 <= limit <= MAX_RETRIEVE:
            raise WorkspaceError(f"limit must be between 1 and {MAX_RETRIEVE}, got {limit}")
        response = self.reme.engine_search(
            query,
            # Hits are chunks and a record may have several; a few spare ones cover those and
            # notes that fail the scope check.
            limit=min(limit * 5, 200),
            min_score=min_score,
            filters=SearchFilters(paths=[scope_folder(scope)], statuses=wanted),
            expand=False,
        )
        result = MemoryRetrieval(
            query=query, arms=list(response.arms), degraded=list(response.degraded)
        )
        seen: set[str] = set()
        for hit in response.hits:
            if hit.path in seen:
                continue
            seen.add(hit.path)
            loaded = self.store.scoped(hit.path, scope)
            if loaded is None:
                continue  # not a record, or another scope's: never shown to this caller
            if loaded.record.status not in wanted:
                continue  # the index lags a hand edit of the status: the note decides
            result.hits.append(MemoryHit(score=hit.score, record=loaded.record))
            if len(result.hits) >= limit:
                break
        return result

    # -- the model ---------------------------------------------------------------------------

    def summarize(
        self,
        messages: Iterable[MemoryMessage | dict[str, Any]],
        *,
        user_name: str | None = None,
        task_name: str | None = None,
        tool_name: str | None = None,
        sources: Sequence[str] = (),
    ) -> MemorySummary:
        """Extract the scope's memories from ``messages`` with one model call and write them:
        new ones are added, those the model says refine a record update it, repeats of a
        record's content change nothing. A model answer that never validates is an LlmError
        and nothing is written.

        With ``memory.review: queue`` nothing is written either: each new or updated record
        becomes a MEMORY proposal (``proposals``) for ``reme review``; a memory already pending
        or rejected in review is not proposed again."""
        scope = MemoryScope.of(user_name, task_name, tool_name)
        llm = self.reme.llm
        agentic = self.reme.settings.memory.mode == "agentic"
        if agentic and self.reme.agent_wrapper is None:
            raise ConfigError("memory.mode agentic needs components.agent_wrapper (e.g. toolloop)")
        if llm is None and not agentic:
            raise ConfigError(
                "summarize_memory needs a model: set components.llm, e.g. "
                "--set components.llm='{name: openai, settings: {model: ...}}'"
            )
        chat = _messages(messages)
        linked = note.clean_sources(sources)
        prompts = load_prompts(*PROMPTS, self.reme.settings.language)
        before = llm.usage.model_copy() if llm is not None else LlmUsage()
        queue = self.reme.settings.memory.review == "queue"
        with changing(self.reme, scope) as change:
            existing = {loaded.record.memory_id: loaded for loaded in self.store.records(scope)[0]}
            active = [x.record for x in existing.values() if x.record.status == "active"]
            if agentic:
                from reme_core.memory.agentic import agent_memories

                turns = self.reme.settings.memory.agent_max_turns
                drafts = agent_memories(self.reme, prompts, scope, chat, active, turns)
            else:
                assert llm is not None
                drafts = extract(llm, prompts, scope, chat, active)
            # The agent's model calls count too (toolloop calls this model).
            result = MemorySummary(usage=llm.usage.since(before) if llm is not None else before)
            by_content = {  # a superseded statement is no longer the scope's to repeat
                same_content(x.record.content): x.record.memory_id
                for x in existing.values()
                if x.record.status != "superseded"
            }
            if queue:
                from reme_core.memory.review import MemoryProposer  # it builds on this module

                proposer = MemoryProposer(self.reme, scope, self.clock)
                return proposer.summarize(drafts, existing, by_content, linked, result)
            added: dict[str, MemoryRecord] = {}
            updated: dict[str, MemoryRecord] = {}
            for draft in drafts:
                metadata = draft.metadata(scope.memory_type)
                target = existing.get(draft.refines) if draft.refines else None
                if target is not None and target.record.status == "superseded":
                    result.warnings.append(
                        f"the model said a memory refines {draft.refines!r}, which is superseded "
                        f"by {target.record.superseded_by!r}; it was added as a new one"
                    )
                    target = None
                elif draft.refines and target is None:
                    result.warnings.append(
                        f"the model said a memory refines {draft.refines!r}, which is no "
                        f"{scope.describe()} memory; it was added as a new one"
                    )
                try:
                    if target is not None:
                        merged = {**target.record.metadata, **metadata}
                        fields = record_fields(
                            scope,
                            draft.content,
                            draft.when_to_use or target.record.when_to_use,
                            merged,
                            [*target.record.sources, *linked],
                        )
                        rewrite = self._rewrite(target, change, **fields)
                        if rewrite is None:
                            result.unchanged.append(target.record.memory_id)
                            continue
                        record, kept = rewrite
                        existing[record.memory_id] = self.store.find(scope, record.memory_id)
                        updated[record.memory_id] = record
                        if kept is not None:
                            existing[kept.memory_id] = self.store.find(scope, kept.memory_id)
                            result.superseded.append(kept)
                    elif same_content(draft.content) in by_content:
                        result.unchanged.append(by_content[same_content(draft.content)])
                        continue
                    else:
                        fields = record_fields(
                            scope, draft.content, draft.when_to_use, metadata, linked
                        )
                        record = self._create(scope, change, **fields)
                        added[record.memory_id] = record
                except WorkspaceError as exc:  # a hand edit raced this call, a bad value
                    result.skipped.append(SkippedDraft(content=draft.content, reason=str(exc)))
                    continue
                by_content[same_content(record.content)] = record.memory_id
            result.added = list(added.values())
            result.updated = [r for k, r in updated.items() if k not in added]
            if result.added or result.updated:
                change.commit(
                    f"summarize: {len(result.added)} added, {len(result.updated)} updated", result
                )
        return result

    # -- internals ---------------------------------------------------------------------------

    def _create(self, scope: MemoryScope, change: Change, **fields: Any) -> MemoryRecord:
        memory_id, text = new_record(scope, self.clock(), **fields)
        record = self.store.create(scope, memory_id, text)
        change.verbs.append(f"ADD {record_path(scope, memory_id)}")
        return record

    def _rewrite(
        self, current: Loaded, change: Change, **fields: Any
    ) -> tuple[MemoryRecord, MemoryRecord | None] | None:
        """The record rewritten with ``fields`` and, when its content changed, the old statement
        kept as a superseded record; None when the fields change nothing."""
        check_current(current.record)
        text = rewritten(current, self.clock, **fields)
        if text is None:
            return None
        kept: MemoryRecord | None = None
        if same_content(fields["content"]) != same_content(current.record.content):
            scope = current.record.scope
            copy_id = self.store.free_version(scope, current.record.memory_id)
            today = self.clock().astimezone(self.reme.settings.tzinfo()).date()
            copy = superseded_copy(current, copy_id, current.record.path, today)
            # The copy first: if the rewrite then fails (a hand edit raced it), the copy goes
            # again, so a failed update changes nothing; the other way round it could overwrite.
            kept = self.store.create(scope, copy_id, copy)
        try:
            record = self.store.replace(current.record, text)
        except BaseException:
            if kept is not None:
                self.store.remove(kept)
            raise
        if kept is not None:
            change.verbs.append(f"SUPERSEDE {kept.path}")
        change.verbs.append(f"UPDATE {record.path}")
        return record, kept


def _messages(messages: Iterable[MemoryMessage | dict[str, Any]]) -> list[MemoryMessage]:
    try:
        parsed = [
            m if isinstance(m, MemoryMessage) else MemoryMessage.model_validate(m) for m in messages
        ]
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(map(str, first["loc"]))
        raise WorkspaceError(f"messages: {where}: {first['msg']}") from None
    kept = [m for m in parsed if m.text or m.tool_calls]
    if not kept:
        raise WorkspaceError("messages hold no text to summarize")
    return kept


def _utc(moment: dt.datetime) -> dt.datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=dt.UTC)


def _passes(record: MemoryRecord, filters: MemoryFilters) -> bool:
    if record.status not in filters.statuses:
        return False
    if filters.text:
        needle = filters.text.casefold()
        if needle not in record.content.casefold() and needle not in record.when_to_use.casefold():
            return False
    if any(record.metadata.get(k) != v for k, v in filters.metadata.items()):
        return False
    if filters.since is not None and record.updated < _utc(filters.since):
        return False
    return filters.until is None or record.updated <= _utc(filters.until)


def _sorted(records: list[MemoryRecord], sort_key: str, reverse: bool) -> list[MemoryRecord]:
    def value(record: MemoryRecord) -> Any:
        if sort_key.startswith("metadata."):
            return record.metadata.get(sort_key.removeprefix("metadata."))
        return getattr(record, sort_key)

    present = [r for r in records if value(r) is not None]
    missing = [r for r in records if value(r) is None]

    def key(record: MemoryRecord) -> tuple[int, Any, str]:
        found = value(record)
        # Numbers before text, so a metadata key holding both still sorts; the id breaks ties.
        if isinstance(found, bool | int | float):
            return (0, float(found), record.memory_id)
        if isinstance(found, dt.datetime):
            return (0, found.timestamp(), record.memory_id)
        return (1, str(found).casefold(), record.memory_id)

    return sorted(present, key=key, reverse=reverse) + missing
