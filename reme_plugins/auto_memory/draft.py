"""What the model returns in structured mode; code turns it into the note's Markdown.

Existing facts survive unless the model names them in ``replaces``: a merge the model forgets to
make leaves a duplicate, never a silent loss. Line numbers are checked against the turns the
model was shown, and a quote that is not in the transcript word for word is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel, Field, model_validator

from reme_plugins.auto_memory.transcript import Entry


class FactDraft(BaseModel):
    text: str = Field(
        min_length=1,
        description="One fact, decision, preference or open question, in one self-contained "
        "sentence.",
    )
    quote: str = Field(
        "",
        description="Exact words copied from a turn where the wording matters (a command, an "
        "error message, a name, a number, a path); empty when it does not.",
    )
    lines: list[int] = Field(
        default_factory=list,
        description="Transcript line numbers (the `line` of the turns) this fact comes from.",
    )
    replaces: list[int] = Field(
        default_factory=list,
        description="Numbers of existing facts (F2 -> 2) that this fact corrects, updates or "
        "merges; they are removed from the note.",
    )


class TimelineDraft(BaseModel):
    line: int = Field(description="The transcript line of the new turn this event happened in.")
    text: str = Field(min_length=1, description="What happened, in a few words.")


class NoteDraft(BaseModel):
    trivial: bool = Field(
        description="True when the new turns hold nothing worth remembering (greetings, small "
        "talk, thanks); then the other fields are ignored."
    )
    name: str = Field("", description="The note's title: what the session was about.")
    description: str = Field("", description="One sentence saying what the note holds.")
    summary: str = Field(
        "",
        description="A short paragraph summarising the whole session that day, existing note "
        "included.",
    )
    facts: list[FactDraft] = Field(
        default_factory=list, description="New facts, or revisions of existing ones."
    )
    timeline: list[TimelineDraft] = Field(
        default_factory=list,
        description="Events of the NEW turns only, in order; earlier entries are kept as they are.",
    )

    @model_validator(mode="after")
    def _named(self) -> NoteDraft:
        if not self.trivial and not (self.name.strip() and self.description.strip()):
            raise ValueError("a note that is not trivial needs a name and a description")
        return self


@dataclass
class CheckedFact:
    text: str
    quote: str
    lines: list[int]
    replaces: list[int]


@dataclass
class CheckedDraft:
    facts: list[CheckedFact] = field(default_factory=list)
    timeline: list[tuple[Entry, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _squash(text: str) -> str:
    return " ".join(text.split())


def check_draft(
    draft: NoteDraft,
    new: list[Entry],
    shown: list[Entry],
    existing_facts: int,
    recorded: set[int],
) -> CheckedDraft:
    """Keep what the transcript supports: line numbers among the turns shown, verbatim quotes,
    timeline entries for new turns not already in the timeline."""
    by_line = {entry.line: entry for entry in shown}
    new_lines = {entry.line for entry in new}
    out = CheckedDraft()
    for index, fact in enumerate(draft.facts, start=1):
        lines = [n for n in dict.fromkeys(fact.lines) if n in by_line]
        quote = fact.quote.strip()
        if quote:
            needle = _squash(quote)
            holders = [n for n in lines if needle in _squash(by_line[n].content)]
            if not holders:
                holders = [e.line for e in shown if needle in _squash(e.content)][:1]
                lines = holders + lines
            if not holders:
                out.warnings.append(f"fact {index}: quote not found verbatim, left out: {quote!r}")
                quote = ""
        replaces = [n for n in dict.fromkeys(fact.replaces) if 1 <= n <= existing_facts]
        out.facts.append(CheckedFact(fact.text, quote, lines, replaces))
    seen: set[tuple[int, str]] = set()
    for event in sorted(draft.timeline, key=lambda e: e.line):
        key = (event.line, _squash(event.text))
        if event.line not in new_lines or event.line in recorded or key in seen:
            continue  # context turns and turns already in the timeline are not events again
        seen.add(key)
        out.timeline.append((by_line[event.line], event.text))
    return out
