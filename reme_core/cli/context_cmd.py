"""``reme context ...``: the context API on a messages file (JSON list, or ``{"messages": [...]}``;
``-`` reads stdin).

``count`` and ``check`` need only the configured tokenizer, not a workspace; ``compact-tool-results``
spills into the workspace's ``tool_results/``; ``compact`` summarises with the configured model.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from reme_core.cli.group import RemeGroup
from reme_core.cli.options import config_file_option, emit, overrides_option, workspace_options
from reme_core.components import ComponentContext, Tokenizer
from reme_core.light.agent import AgentContext
from reme_core.light.messages import ContextError, validate_messages
from reme_core.light.split import check_context
from reme_core.light.tokens import TokenCounter
from reme_core.plugins import load_plugins
from reme_core.runtime import Reme
from reme_core.settings import load_settings, resolve_component

messages_argument = click.argument("messages_file", metavar="FILE", type=click.File("r"))
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON.")


def read_messages(stream: Any) -> list[dict[str, Any]]:
    """Messages from a JSON file: a list, or an object with a ``messages`` list."""
    name = getattr(stream, "name", "FILE")
    try:
        data = json.load(stream)
    except ValueError as exc:
        raise ContextError(f"{name} is not JSON: {exc}") from None
    if isinstance(data, dict) and "messages" in data:
        data = data["messages"]
    return validate_messages(data)


def open_tokenizer(config_file: Path | None, overrides: tuple[str, ...]) -> Tokenizer:
    """The configured tokenizer, built without opening a workspace."""
    settings = load_settings(config_file, overrides)
    cls, component_settings = resolve_component(
        load_plugins(), "tokenizer", settings.components.tokenizer, "components.tokenizer"
    )
    root = settings.workspace_path()
    return cls(component_settings, ComponentContext(workspace=root, state_dir=root / ".reme"))


@click.group("context", cls=RemeGroup)
def context_group() -> None:
    """Token budgets and compaction for agent messages (reme_core.light)."""


@context_group.command("count")
@messages_argument
@config_file_option
@overrides_option
@json_option
def count_command(
    messages_file: Any, config_file: Path | None, overrides: tuple[str, ...], as_json: bool
) -> None:
    """Tokens of each message and in all, by the configured tokenizer."""
    messages = read_messages(messages_file)
    counter = TokenCounter(open_tokenizer(config_file, overrides))
    sizes = [counter.message(m) for m in messages]
    result = {"tokenizer": counter.model_id, "total_tokens": sum(sizes), "messages": sizes}
    emit(result, as_json, _count_text)


def _count_text(result: dict[str, Any]) -> str:
    lines = [f"{i:>5}  {n:>8}" for i, n in enumerate(result["messages"])]
    lines.append(f"total  {result['total_tokens']:>7} tokens ({result['tokenizer']})")
    return "\n".join(lines)


@context_group.command("check")
@messages_argument
@click.option("--threshold", type=int, required=True, help="Compact above this many tokens.")
@click.option("--reserve", type=int, default=10_000, show_default=True, help="Tokens kept.")
@config_file_option
@overrides_option
@json_option
def check_command(
    messages_file: Any,
    threshold: int,
    reserve: int,
    config_file: Path | None,
    overrides: tuple[str, ...],
    as_json: bool,
) -> None:
    """Where the messages would be cut: which to compact, which to keep."""
    messages = read_messages(messages_file)
    counter = TokenCounter(open_tokenizer(config_file, overrides))
    split = check_context(messages, threshold, reserve, counter)
    lead = _leading_system(messages)  # never compacted
    compact = list(range(lead, lead + len(split.to_compact)))
    result = {
        "tokenizer": counter.model_id,
        "total_tokens": split.total_tokens,
        "keep_tokens": split.keep_tokens,
        "threshold": threshold,
        "reserve": reserve,
        "is_valid": split.is_valid,
        "compact": compact,
        "keep_from": compact[-1] + 1 if compact else None,
        "reason": split.reason,
    }
    emit(result, as_json, _check_text)


def _leading_system(messages: list[dict[str, Any]]) -> int:
    count = 0
    while count < len(messages) and messages[count].get("role") == "system":
        count += 1
    return count


def _check_text(result: dict[str, Any]) -> str:
    head = (
        f"{result['total_tokens']} tokens ({result['tokenizer']}), threshold {result['threshold']}"
    )
    if not result["is_valid"]:
        return f"{head}: no valid cut: {result['reason']}"
    if not result["compact"]:
        return f"{head}: fits, nothing to compact"
    first, last = result["compact"][0], result["compact"][-1]
    return (
        f"{head}: compact messages {first}-{last}, keep {result['keep_tokens']} tokens "
        f"from message {result['keep_from']}"
    )


@context_group.command("compact-tool-results")
@messages_argument
@click.option("--recent-n", type=int, default=1, show_default=True)
@click.option("--recent-max-bytes", type=int, default=100 * 1024, show_default=True)
@click.option("--old-max-bytes", type=int, default=3000, show_default=True)
@click.option("--retention-days", type=float, default=3.0, show_default=True)
@workspace_options(writes=False)
def compact_tool_results_command(
    opener: Callable[[], Reme],
    as_json: bool,
    messages_file: Any,
    recent_n: int,
    recent_max_bytes: int,
    old_max_bytes: int,
    retention_days: float,
) -> None:
    """Cut long tool outputs, spilling them to tool_results/; prints the messages as JSON
    (with --json: a report with the messages, the files written and the files expired)."""
    messages = read_messages(messages_file)
    with opener() as reme:
        context = AgentContext(reme, persist_pipeline=None)
        report = context.compact_tool_results(
            messages, recent_n, recent_max_bytes, old_max_bytes, retention_days
        )
    if as_json:
        emit(
            {
                "messages": report.messages,
                "spilled": report.spilled,
                "cut": report.cut,
                "removed": report.removed,
            },
            True,
        )
    else:
        json.dump(report.messages, sys.stdout, ensure_ascii=False, indent=2)
        click.echo()


@context_group.command("compact")
@messages_argument
@click.option("--previous", "previous_file", type=click.File("r"), help="The summary so far.")
@click.option("--max-input-length", type=int, default=128_000, show_default=True)
@click.option("--compact-ratio", type=float, default=0.7, show_default=True)
@click.option("--language", type=click.Choice(["en", "zh"]), help="Default: config language.")
@workspace_options(writes=False)
def compact_command(
    opener: Callable[[], Reme],
    as_json: bool,
    messages_file: Any,
    previous_file: Any,
    max_input_length: int,
    compact_ratio: float,
    language: str | None,
) -> None:
    """Summarise the messages with the configured model (Goal, Constraints, Progress, ...)."""
    messages = read_messages(messages_file)
    previous = previous_file.read() if previous_file is not None else ""
    with opener() as reme:
        context = AgentContext(reme, persist_pipeline=None)
        result = context.compact_memory(
            messages, previous, max_input_length, compact_ratio, language
        )
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)
    emit(result, as_json, lambda r: r.text)


COMMANDS = [context_group]
