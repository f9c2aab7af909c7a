"""What the model sees: the new turns with their transcript line numbers, a few earlier turns for
context, and the existing note with its facts numbered so the model can say which it replaces.

Turn blocks carry ``line="N"``: the model cites those numbers and code turns them into anchors.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from reme_core.api import Prompts, batches, estimate_tokens
from reme_plugins.auto_memory.note import Labels, NoteBody, NoteState, Section
from reme_plugins.auto_memory.request import AutoMemorySettings
from reme_plugins.auto_memory.transcript import Entry, Transcript

CONTEXT_TURN_CHARS = 1_000
"""Earlier turns are orientation only: each is cut shorter than a new turn."""


@dataclass
class Context:
    """Already-recorded turns shown before the new ones, and their prompt text."""

    entries: list[Entry] = field(default_factory=list)
    text: str = ""


@dataclass(frozen=True)
class PromptBuilder:
    prompts: Prompts
    labels: Labels
    settings: AutoMemorySettings
    tz: dt.tzinfo
    session_id: str
    source: str
    hint: str | None

    def turn(self, entry: Entry, limit: int | None = None) -> str:
        text = entry.content
        limit = limit or self.settings.max_turn_chars
        if len(text) > limit:
            text = text[:limit] + f"\n[... {len(text) - limit} more characters not shown]"
        time = ""
        if entry.timestamp is not None:
            time = f' time="{entry.timestamp.astimezone(self.tz):%Y-%m-%d %H:%M}"'
        return f'<turn line="{entry.line}" role="{entry.role}"{time}>\n{text}\n</turn>\n'

    def context(self, transcript: Transcript, batch: list[Entry]) -> Context:
        """The turns just before ``batch``, shortened, within a quarter of the prompt budget."""
        context = Context()
        if not batch or self.settings.context_turns == 0:
            return context
        before = [e for e in transcript.entries if e.line < batch[0].line]
        budget = self.settings.max_prompt_tokens // 4
        limit = min(self.settings.max_turn_chars, CONTEXT_TURN_CHARS)
        for entry in reversed(before[-self.settings.context_turns :]):
            block = self.turn(entry, limit)
            budget -= estimate_tokens(block)
            if budget < 0:
                break
            context.entries.insert(0, entry)
            context.text = block + context.text
        return context

    def existing(self, state: NoteState | None) -> str:
        """The note as the model sees it: name and description, the body without the excerpt
        section, and facts numbered F1, F2, ..."""
        if state is None:
            return self.prompts.render("existing_none").strip()
        body = NoteBody(list(state.body.head), [], self.labels)
        for section in state.body.sections:
            if section.key == "excerpt":
                continue  # its turns are sent as new turns instead
            if section.key == "facts":
                items = [f"F{i}. {item}" for i, item in enumerate(state.body.facts(), start=1)]
                section = Section("facts", section.heading, ["\n", *items, "\n"])
            body.sections.append(section)
        front = "\n".join(
            f"{key}: {state.front[key]}" for key in ("name", "description") if key in state.front
        )
        return f"{front}\n\n{body.render()}".strip()

    def messages(
        self,
        date: dt.date,
        state: NoteState | None,
        context: Context,
        batch: list[Entry],
        *,
        note_path: str | None = None,
    ) -> tuple[str, str]:
        """``(system, user)``; with ``note_path``, the agent's instructions and task instead."""
        values = {
            "session_id": self.session_id,
            "date": date.isoformat(),
            "source": self.source,
            "hint": self.hint or self.prompts.render("hint_none").strip(),
            "existing": self.existing(state),
            "context": context.text.strip() or self.prompts.render("context_none").strip(),
            "turns": "".join(self.turn(e) for e in batch).strip(),
        }
        if note_path is not None:
            return (
                self.prompts.render("agent_system"),
                self.prompts.render("agent_user", note_path=note_path, **values),
            )
        return self.prompts.render("system"), self.prompts.render("user", **values)

    def fits(self, fixed: tuple[str, str], entries: list[Entry]) -> int:
        """How many of ``entries`` fit the budget next to the fixed part (at least one)."""
        budget = self.settings.max_prompt_tokens - sum(estimate_tokens(m) for m in fixed)
        first = next(batches(entries, budget, lambda e: estimate_tokens(self.turn(e))), [])
        return len(first)
