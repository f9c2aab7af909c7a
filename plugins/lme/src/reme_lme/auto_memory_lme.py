"""``auto_memory_lme``: auto_memory with defaults tuned for LongMemEval.

LongMemEval asks about anything the user ever said (a count, a date, a preference stated in
passing), usually in sessions that are mostly chit-chat with an assistant. So the variant:

- tells the model (through auto_memory's ``hint``) to keep every fact the user states about
  themselves and their life, with dates, numbers and names exactly, and never to mark a session
  with such a fact trivial;
- reads bigger batches (fewer, better-informed calls per session) and quotes more of each turn
  when no model is configured.

Everything else (transcript, anchors, cursor, locking) is auto_memory's own code.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from reme_plugins.auto_memory.request import AutoMemorySettings
from reme_plugins.auto_memory.steps import AutoMemoryStep
from reme_plugins.auto_memory.transcript import MAX_HINT_CHARS

LME_HINT = (
    "A long-term memory benchmark will later ask about this user. Record as a separate fact "
    "every piece of information the user states about themselves, their life, plans, "
    "possessions, people, events and preferences, even in passing, with exact numbers, dates, "
    "durations, names and places; also note recommendations or answers the assistant gave that "
    "the user may ask about again. Only mark the session trivial if the user states nothing "
    "about themselves."
)


class LmeAutoMemorySettings(AutoMemorySettings):
    max_prompt_tokens: int = Field(24_000, ge=1_000)
    max_turn_chars: int = Field(6_000, ge=200)
    excerpt_turns: int = Field(400, ge=1)
    excerpt_chars: int = Field(4_000, ge=50)
    hint: str = Field(LME_HINT, max_length=MAX_HINT_CHARS)
    """Used when the caller gives no ``hint`` param."""


class LmeAutoMemoryStep(AutoMemoryStep):
    name: ClassVar[str] = "auto_memory_lme"
    Settings = LmeAutoMemorySettings
    settings: LmeAutoMemorySettings

    def run(self, run: Any, state: dict[str, Any]) -> dict[str, Any]:
        if not state.get("hint"):
            state = {**state, "hint": self.settings.hint}
        return super().run(run, state)
