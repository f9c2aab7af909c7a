"""``memory.mode: agentic``: the configured agent wrapper writes a scope's memories itself.

The agent reads the conversation and the scope's records (the same prompt blocks the structured
call gets) and writes memories as notes in the scope's folder, the only place its tools reach:
a new note per new memory, an edit of a record's note to refine it. Nothing it writes stays as
written: every file it changed is put back, and each note it left becomes one extracted memory
(its text as ``content``, its ``when_to_use``, and ``refines`` when it edited a record), which the
ordinary summarize path validates, redacts and writes with the record's frontmatter, ids and
history, or proposes under ``memory.review: queue``. A note that is not a valid memory is an
``LlmError``: nothing is written, as with a model answer that never validates.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from reme_core.components import AgentTask
from reme_core.errors import LlmError, RemeError
from reme_core.memory.layout import scope_folder
from reme_core.memory.models import MemoryMessage, MemoryRecord, MemoryScope
from reme_core.memory.note import NotARecord, parse, split_body
from reme_core.memory.summarize import MAX_MEMORIES, ExtractedMemory, existing_block, transcript
from reme_core.pipelines.prompts import Prompts
from reme_core.workspace.edits import NoteSnapshot
from reme_core.workspace.hashing import content_hash
from reme_core.workspace.notes import parse_note


def agent_memories(
    reme: Any,
    prompts: Prompts,
    scope: MemoryScope,
    messages: list[MemoryMessage],
    existing: list[MemoryRecord],
    max_turns: int,
) -> list[ExtractedMemory]:
    """Run the agent once over the scope's folder; the memories its notes hold."""
    folder = scope_folder(scope)
    before = NoteSnapshot.take(reme.root, [folder])
    task = AgentTask(
        instructions=prompts.render(f"system_{scope.memory_type}")
        + "\n"
        + prompts.render("agent_rules", folder=folder),
        prompt=prompts.render(
            "user",
            scope_key=scope.key,
            scope_value=scope.value,
            max_memories=MAX_MEMORIES,
            existing=existing_block(existing),
            transcript=transcript(messages),
        ),
        max_turns=max_turns,
    )
    result = reme.run_agent(task, [folder])
    changes = before.changes()
    before.put_back(reme.files, changes)
    if result.stopped == "error":
        raise LlmError(result.error or "the agent failed")
    memories = [
        _memory(path, before.texts.get(path), text)
        for path, text in changes.items()
        if text is not None  # a deleted record was put back; summarize deletes nothing
    ]
    if len(memories) > MAX_MEMORIES:
        raise LlmError(f"the agent wrote {len(memories)} memories, more than {MAX_MEMORIES}")
    return memories


def _memory(path: str, before: str | None, text: str) -> ExtractedMemory:
    """One note the agent left, as the memory it holds."""
    refines = None
    if before is not None:
        try:
            refines = parse(path, before, content_hash(before)).memory_id
        except NotARecord:
            refines = None  # not a record before: a new memory
    try:
        note = parse_note(path, text)
        content, _ = split_body(note.body)
        when = note.frontmatter.get("when_to_use")
        return ExtractedMemory(
            content=content, when_to_use="" if when is None else str(when), refines=refines
        )
    except (RemeError, ValidationError) as exc:
        raise LlmError(f"the agent's note {path} is not a memory: {exc}") from None
