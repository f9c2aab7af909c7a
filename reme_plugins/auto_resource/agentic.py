"""``mode: agentic``: the configured agent wrapper writes a resource note itself.

The agent gets the file's text in its prompt (extracted by the same readers) and file tools
confined to the one note path (the file itself stays out of reach: a resource may be Markdown, and
an agent must not rewrite it). What it leaves is checked before it counts: the note must exist,
have changed, and carry a one-line ``name`` and ``description``; otherwise the note is put back as
it was and the file stays pending. The provenance keys (``source_resource``, ``resource_hash``,
``resource_type``) are the code's job and are set afterwards, so a later run recognises the note
whatever the agent wrote.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reme_core.api import (
    AgentTask,
    LlmError,
    NoteSnapshot,
    Prompts,
    RemeError,
    WorkspaceError,
    content_hash,
    estimate_tokens,
    parse_frontmatter,
)
from reme_plugins.auto_resource import note
from reme_plugins.auto_resource.readers import ResourceSkipped, ResourceText

if TYPE_CHECKING:
    from reme_core.api import PipelineRun


class AgentNoteRejected(RemeError):
    """The agent's note was not kept (the message says why); the file stays pending."""


@dataclass
class AgentNoteWriter:
    run: PipelineRun
    prompts: Prompts
    max_prompt_tokens: int
    max_turns: int

    def write(
        self,
        rel: str,
        resource: ResourceText,
        digest: str,
        path: str,
        before: tuple[str, str] | None,
        reactivate: bool,
    ) -> None:
        """Have the agent write ``path`` for resource ``rel`` (``before``: the note's text and
        hash, None for a new note). Raises ResourceSkipped (too long for one prompt), LlmError
        (the agent failed) or AgentNoteRejected; the note is as before in each case."""
        prompt = self.prompts.render(
            "agentic_user",
            path=rel,
            kind=resource.kind,
            note=path,
            current=before[0] if before else "(none: create it)",
            content=resource.text,
        )
        instructions = self.prompts.render("agentic_system")
        needed = estimate_tokens(instructions) + estimate_tokens(prompt)
        if needed > self.max_prompt_tokens:
            raise ResourceSkipped(
                f"too long for mode agentic (~{needed} tokens, max_prompt_tokens "
                f"{self.max_prompt_tokens}); mode structured reads it in parts"
            )
        task = AgentTask(instructions=instructions, prompt=prompt, max_turns=self.max_turns)
        snapshot = NoteSnapshot.take(self.run.reme.root, [path])
        result = self.run.agent(task, [path])
        if result.stopped == "error":
            snapshot.put_back(self.run.reme.files, snapshot.changes())
            raise LlmError(result.error or "the agent failed")
        problem, written = self._check(path, before)
        if problem:
            snapshot.put_back(self.run.reme.files, snapshot.changes())
            raise AgentNoteRejected(f"the agent's note {path} was not kept: {problem}")
        assert written is not None
        keys: dict[str, Any] = note.provenance_keys(rel, digest, resource.kind)
        remove = note.ARCHIVE_KEYS if reactivate else ()
        self.run.reme.files.update_frontmatter(path, keys, remove, expected_hash=written)

    def _check(self, path: str, before: tuple[str, str] | None) -> tuple[str | None, str | None]:
        """What is wrong with the note the agent left (None if nothing), and its hash."""
        try:
            text = (self.run.reme.root / path).read_text(encoding="utf-8")
        except FileNotFoundError:
            return f"it did not write {path}", None
        except (OSError, UnicodeDecodeError) as exc:
            return f"{path} cannot be read: {exc}", None
        written = content_hash(text)
        if before is not None and written == before[1]:
            return "it left the note unchanged", written
        try:
            front, _ = parse_frontmatter(text, path)
        except WorkspaceError as exc:
            return str(exc), written
        for key in ("name", "description"):
            value = str(front.get(key) or "").strip()
            if not value or "\n" in value:
                return f"its frontmatter needs a one-line {key}", written
        return None, written
