"""``compact_memory``: messages folded into a structured summary that replaces them in context.

The summary has six sections: Goal, Constraints, Progress, Key Decisions, Next Steps, Critical
Context. With a previous summary the model updates it rather than starting over (incremental).
A history longer than the model's input budget (``max_input_length * compact_ratio``) is folded
in parts, each part updating the summary of the ones before.

Exact strings an agent needs again (file paths, function names, error messages) are also pulled
out of the messages by pattern and added verbatim to Critical Context when the model left them
out, so a paraphrasing model cannot lose them. Without a model, or when the model's output never
validates, the summary is built from the previous one and those verbatim items alone, and says
how many messages it folded in: the messages themselves are persisted, so nothing is lost.

Either way the summary is redacted (``reme_core.redact``) before it is returned: it goes back
into the context, into ``SessionMemory.summary`` and from there wherever the caller saves state,
and neither a model repeating a secret nor a verbatim error line quoting one may carry it there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from reme_core.components import Llm
from reme_core.errors import LlmError
from reme_core.light.messages import ContextError, content_text, message_text, tool_calls
from reme_core.light.tokens import TokenCounter
from reme_core.pipelines.prompts import Prompts, load_prompts
from reme_core.redact import redact_data

PROMPTS_PACKAGE = "reme_core.light"
PROMPTS_NAME = "compact"
"""The prompt file: ``reme_core/light/prompts/compact.yaml``."""

SECTIONS: tuple[str, ...] = (
    "goal",
    "constraints",
    "progress",
    "key_decisions",
    "next_steps",
    "critical_context",
)
MAX_CRITICAL_ITEMS = 40
MAX_ITEM_CHARS = 400
PROMPT_MARGIN = 512
"""Tokens left free in each summarising call for the template's own text and rounding."""
MIN_PART_TOKENS = 256

_PATH = re.compile(
    r"(?<![\w/.-])(?:[\w.-]+/)+[\w.-]+\.\w{1,8}\b"
    r"|(?<![\w/.-])[\w-]+\.(?:py|js|ts|tsx|jsx|md|json|jsonl|ya?ml|toml|txt|rs|go|java|kt|c|h|cc"
    r"|cpp|hpp|sh|sql|html|css|cfg|ini|lock|log|csv)\b"
)
_FUNCTION = re.compile(r"\b(?:def|class|function|func|fn)\s+([A-Za-z_]\w*)|\b([A-Za-z_][\w.]*)\(\)")
_ERROR = re.compile(
    r"^.*\b\w*(?:Error|Exception)\b.*$|^\s*(?:error|fatal|failed|panic)\b.*$",
    re.MULTILINE | re.IGNORECASE,
)


class ContextSummary(BaseModel):
    """The structured summary the model returns (and the fallback builds)."""

    model_config = ConfigDict(extra="ignore")

    goal: str = ""
    constraints: list[str] = Field(default_factory=list)
    progress: list[str] = Field(default_factory=list)
    key_decisions: list[str] = Field(default_factory=list)
    next_steps: list[str] = Field(default_factory=list)
    critical_context: list[str] = Field(default_factory=list)

    @field_validator("goal", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any) -> Any:
        return "" if value is None else value

    @field_validator(*SECTIONS[1:], mode="before")
    @classmethod
    def _one_item_is_a_list(cls, value: Any) -> Any:
        # Models often answer a section with one string or null; anything else must validate.
        if value is None:
            return []
        return [value] if isinstance(value, str) else value

    @field_validator(*SECTIONS[1:])
    @classmethod
    def _clean(cls, items: list[str]) -> list[str]:
        return [item.strip() for item in items if item.strip()]


class CompactResult(BaseModel):
    text: str
    """The rendered summary (Markdown, one ``##`` section each), as it goes into the context."""
    summary: ContextSummary
    source: Literal["model", "fallback"]
    calls: int = 0
    """Model requests made: one per part, plus any retries of output that did not validate."""
    parts: int = 0
    input_tokens: int = 0
    """Tokens of the messages folded in."""
    summary_tokens: int = 0
    warnings: list[str] = Field(default_factory=list)


def input_budget(max_input_length: int, compact_ratio: float) -> float:
    """``max_input_length * compact_ratio``: the tokens a model call may read; ContextError when
    either is out of range."""
    if max_input_length <= 0 or not 0 < compact_ratio <= 1:
        raise ContextError(
            "max_input_length must be positive and compact_ratio in (0, 1], got "
            f"{max_input_length} and {compact_ratio}"
        )
    return max_input_length * compact_ratio


def compact_memory(
    messages: Sequence[Mapping[str, Any]],
    *,
    llm: Llm | None,
    counter: TokenCounter,
    prompts: Prompts,
    previous_summary: str = "",
    max_input_length: int = 128_000,
    compact_ratio: float = 0.7,
    max_summary_tokens: int | None = None,
    extra_instruction: str = "",
) -> CompactResult:
    """Fold ``messages`` (and ``previous_summary``) into one structured summary;
    ``extra_instruction`` (the caller's words on what to keep or drop) ends the system prompt."""
    budget = int(input_budget(max_input_length, compact_ratio))
    cap = max_summary_tokens or max(1000, max_input_length // 20)
    blocks = [render_message(m) for m in messages]
    input_tokens = sum(counter.text(b) for b in blocks)
    warnings: list[str] = []
    summary: ContextSummary | None = None
    calls = parts = 0
    if llm is None:
        warnings.append("no model configured: the summary keeps verbatim items only")
    elif blocks:
        before = llm.usage.calls
        try:
            summary, parts = _summarise(
                llm, counter, prompts, blocks, previous_summary, budget, extra_instruction
            )
        except LlmError as exc:
            warnings.append(f"the model failed, so the summary keeps verbatim items only: {exc}")
        calls = llm.usage.calls - before
    source: Literal["model", "fallback"] = "model"
    if summary is None:
        source = "fallback"
        summary = _fallback(messages, previous_summary, prompts)
    summary = _redacted(_keep_verbatim(summary, messages, prompts))
    summary, text = _fit(summary, prompts, counter, cap)
    return CompactResult(
        text=text,
        summary=summary,
        source=source,
        calls=calls,
        parts=parts,
        input_tokens=input_tokens,
        summary_tokens=counter.text(text),
        warnings=warnings,
    )


# -- the model path ------------------------------------------------------------------------------


def _summarise(
    llm: Llm,
    counter: TokenCounter,
    prompts: Prompts,
    blocks: list[str],
    previous: str,
    budget: int,
    extra_instruction: str = "",
) -> tuple[ContextSummary, int]:
    system = prompts.render("system")
    if extra_instruction.strip():
        system = f"{system}\n\n{extra_instruction.strip()}"
    fixed = counter.text(system) + counter.text(prompts.templates["user"]) + PROMPT_MARGIN
    summary: ContextSummary | None = None
    remaining = list(blocks)
    part = 0
    while remaining:
        previous_text = render_summary(summary, prompts) if summary is not None else previous
        room = budget - fixed - counter.text(previous_text)
        if room < MIN_PART_TOKENS:
            raise ContextError(
                f"max_input_length * compact_ratio ({budget} tokens) leaves no room for messages "
                "next to the summary prompt; raise max_input_length or compact_ratio"
            )
        chunk, remaining = _take_part(remaining, room, counter)
        part += 1
        parts_total = part + _estimate_parts(remaining, room, counter)
        user = prompts.render(
            "user",
            previous_summary=previous_text or prompts.render("previous_none"),
            transcript="\n".join(chunk),
            part=part,
            parts=parts_total,
        )
        summary = llm.structured(
            [{"role": "system", "content": system}, {"role": "user", "content": user}],
            ContextSummary,
        )
    assert summary is not None
    return summary, part


def _take_part(blocks: list[str], room: int, counter: TokenCounter) -> tuple[list[str], list[str]]:
    """The blocks that fit ``room`` (at least one, cut to fit), and the rest."""
    taken: list[str] = []
    used = 0
    for index, block in enumerate(blocks):
        size = counter.text(block)
        if used + size > room:
            if taken:
                return taken, blocks[index:]
            return [cap_text(block, room, counter)], blocks[index + 1 :]
        taken.append(block)
        used += size
    return taken, []


def _estimate_parts(blocks: list[str], room: int, counter: TokenCounter) -> int:
    total = sum(counter.text(b) for b in blocks)
    return 0 if total == 0 else -(-total // room)


def cap_text(text: str, max_tokens: int, counter: TokenCounter) -> str:
    """``text`` within ``max_tokens``: its head and its tail, with how much was cut between."""
    total = counter.text(text)
    if total <= max_tokens:
        return text
    tail_tokens = max_tokens // 4
    head = counter.truncate(text, max_tokens - tail_tokens - 16)
    tail_chars = int(len(text) * tail_tokens / total)
    tail = text[len(text) - tail_chars :] if tail_chars else ""
    return f"{head}\n[... about {total - max_tokens} tokens cut ...]\n{tail}"


def render_message(message: Mapping[str, Any]) -> str:
    """One message as a transcript block: ``[role]`` then its text and tool calls."""
    role = str(message.get("role", ""))
    if role == "tool":
        label = f"[tool result {message.get('tool_call_id', '')}]"
        return f"{label}\n{content_text(message.get('content'))}\n"
    label = f"[{role}]" if not tool_calls(message) else f"[{role}, calling tools]"
    return f"{label}\n{message_text(message)}\n"


# -- fallback and verbatim items -----------------------------------------------------------------


def _fallback(
    messages: Sequence[Mapping[str, Any]], previous: str, prompts: Prompts
) -> ContextSummary:
    summary = parse_summary(previous)
    if summary is None:
        summary = ContextSummary(progress=[previous.strip()] if previous.strip() else [])
    if not summary.goal:
        first_user = next((m for m in messages if m.get("role") == "user"), None)
        if first_user is not None:
            summary.goal = _clip(content_text(first_user.get("content")))
    if messages:
        summary.progress.append(prompts.render("fallback_progress", count=len(messages)))
    return summary


def verbatim_items(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """File paths, function names and error lines found in the messages, first seen first."""
    found: dict[str, None] = {}
    for message in messages:
        text = message_text(message)
        for match in _PATH.finditer(text):
            found.setdefault(match.group(), None)
        for match in _FUNCTION.finditer(text):
            name = match.group(1) or match.group(2)
            found.setdefault(f"{name}()" if match.group(2) else name, None)
        for match in _ERROR.finditer(text):
            found.setdefault(_clip(match.group().strip()), None)
    return list(found)


def _keep_verbatim(
    summary: ContextSummary, messages: Sequence[Mapping[str, Any]], prompts: Prompts
) -> ContextSummary:
    """Add the verbatim items the summary does not already contain, latest kept when capped."""
    text = render_summary(summary, prompts)
    missing = [item for item in verbatim_items(messages) if item not in text]
    items = [*summary.critical_context, *missing]
    return summary.model_copy(update={"critical_context": items[-MAX_CRITICAL_ITEMS:]})


def _redacted(summary: ContextSummary) -> ContextSummary:
    """Secrets out of every section; before ``_fit``, as a marker may be longer than a secret."""
    fields, _ = redact_data(summary.model_dump())
    return ContextSummary.model_validate(fields)


def _fit(
    summary: ContextSummary, prompts: Prompts, counter: TokenCounter, cap: int
) -> tuple[ContextSummary, str]:
    """Drop the oldest progress and critical items (then cut the text) until within ``cap``."""
    summary = summary.model_copy(deep=True)
    text = render_summary(summary, prompts)
    while counter.text(text) > cap and (summary.progress or summary.critical_context):
        longer = (
            "progress"
            if len(summary.progress) >= len(summary.critical_context)
            else "critical_context"
        )
        getattr(summary, longer).pop(0)
        text = render_summary(summary, prompts)
    if counter.text(text) > cap:
        text = counter.truncate(text, cap)
    return summary, text


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_ITEM_CHARS else text[: MAX_ITEM_CHARS - 3] + "..."


# -- rendering and parsing -----------------------------------------------------------------------


def render_summary(summary: ContextSummary, prompts: Prompts) -> str:
    """Markdown: ``## <heading>`` per non-empty section (Goal always), bullets for lists."""
    lines: list[str] = []
    for section in SECTIONS:
        value = getattr(summary, section)
        if section != "goal" and not value:
            continue
        lines.append(f"## {prompts.render(f'heading_{section}')}")
        if isinstance(value, str):
            lines.append(value.strip() or "-")
        else:
            lines.extend(f"- {' '.join(item.splitlines())}" for item in value)
        lines.append("")
    return "\n".join(lines).strip()


def parse_summary(text: str) -> ContextSummary | None:
    """Read back a rendered summary (headings of either language); None if it is not one."""
    if not text.strip():
        return None
    by_heading = _headings()
    values: dict[str, Any] = {}
    section: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("## "):
            section = by_heading.get(line[3:].strip())
            if section is None:
                return None
            values.setdefault(section, "" if section == "goal" else [])
        elif section is None:
            if line:
                return None
        elif section == "goal":
            values["goal"] = f"{values['goal']} {line}".strip() if line else values["goal"]
        elif line.startswith("- "):
            values[section].append(line[2:])
        elif line and values[section]:
            values[section][-1] += f" {line}"
    return ContextSummary.model_validate(values) if values else None


def _headings() -> dict[str, str]:
    out: dict[str, str] = {}
    for language in ("en", "zh"):
        prompts = load_prompts(PROMPTS_PACKAGE, PROMPTS_NAME, language)
        for section in SECTIONS:
            out[prompts.render(f"heading_{section}")] = section
    return out
