"""``reme memory ...``: personal, procedural and tool memory records from the command line.

Each command is one operation of the service layer (``memory_add``, ``memory_list``, ...): with a
server running for the workspace it is sent there (the server's token profile applies), else it
runs in-process through the same operation, so both ways validate and answer alike.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, TextIO

import click
from pydantic import ValidationError

from reme_core.cli.group import RemeGroup
from reme_core.cli.options import emit, workspace_options
from reme_core.client import RemoteReme
from reme_core.errors import RemeError, WorkspaceError
from reme_core.service.operations import OPERATIONS
from reme_core.settings import parse_override


def scope_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """--user, --task and --tool: exactly one names the scope the command works in."""
    for flag, key, kind in reversed(
        [
            ("--user", "user_name", "a user's personal memories"),
            ("--task", "task_name", "a task's procedural memories"),
            ("--tool", "tool_name", "a tool's usage guidance"),
        ]
    ):
        func = click.option(flag, key, metavar="NAME", help=f"Scope: {kind}.")(func)
    return func


def call(reme: Any, operation: str, payload: dict[str, Any]) -> Any:
    """Run ``operation`` on the server serving the workspace, or in-process."""
    given = {k: v for k, v in payload.items() if v is not None}
    if isinstance(reme, RemoteReme):
        return reme.client.call(operation, given)
    try:
        return OPERATIONS[operation].call(reme, given)
    except ValidationError as exc:
        raise WorkspaceError(_problems(exc)) from None


def _problems(exc: ValidationError) -> str:
    lines = []
    for error in exc.errors():
        where = ".".join(map(str, error["loc"]))
        message = error["msg"].removeprefix("Value error, ")
        lines.append(f"{where}: {message}" if where else message)
    return "; ".join(lines)


def _metadata(items: tuple[str, ...], option: str) -> dict[str, Any]:
    """``KEY=VALUE`` pairs, values read as YAML (``0.8`` is a number, ``[a, b]`` a list)."""
    found: dict[str, Any] = {}
    for item in items:
        keys, value = parse_override(item)
        if len(keys) != 1:
            raise RemeError(f"{option} {item!r}: metadata keys are plain names, not dotted paths")
        found[keys[0]] = value
    return found


def _line(record: dict[str, Any]) -> str:
    first = next((ln for ln in record["content"].splitlines() if ln.strip()), "")
    line = f"{record['memory_id']}  {record['updated'][:10]}  {first[:80]}"
    if record.get("status") == "superseded":
        line += f"  (superseded by {record.get('superseded_by') or 'a newer record'})"
    return line


def _show(record: dict[str, Any]) -> str:
    scope = next(record[k] for k in ("user_name", "task_name", "tool_name") if record.get(k))
    head = [f"{record['memory_id']} ({record['memory_type']}: {scope}) {record['path']}"]
    if record["when_to_use"]:
        head.append(f"when to use: {record['when_to_use']}")
    if record["metadata"]:
        head.append(f"metadata: {json.dumps(record['metadata'], ensure_ascii=False)}")
    if record["sources"]:
        head.append("sources: " + ", ".join(record["sources"]))
    if record.get("status") == "superseded":
        head.append(f"superseded by {record.get('superseded_by') or 'a newer record'}")
    head.append(f"updated {record['updated']}, created {record['created']}")
    return "\n".join(head) + "\n\n" + record["content"]


def _history(result: dict[str, Any]) -> str:
    if result.get("history"):
        return f" (history {result['history']})"
    if result.get("history_error"):
        return f" (no history commit: {result['history_error']})"
    return ""


@click.group("memory", cls=RemeGroup)
def memory_group() -> None:
    """Memory records: personal (--user), procedural (--task) and tool guidance (--tool)."""


@memory_group.command("add")
@click.argument("content", required=False)
@scope_options
@click.option("--when-to-use", default="", help="The situation the memory matters in.")
@click.option("--meta", "meta", multiple=True, metavar="KEY=VALUE", help="Metadata (YAML value).")
@click.option("--source", "sources", multiple=True, metavar="LINK", help="A note it comes from.")
@workspace_options(remote=True)
def add_command(
    opener: Callable[[], Any], as_json: bool, content: str | None, **given: Any
) -> None:
    """Add a memory (CONTENT, or standard input)."""
    payload = {
        "content": sys.stdin.read() if content is None else content,
        "user_name": given["user_name"],
        "task_name": given["task_name"],
        "tool_name": given["tool_name"],
        "when_to_use": given["when_to_use"],
        "metadata": _metadata(given["meta"], "--meta"),
        "sources": list(given["sources"]),
    }
    with opener() as reme:
        result = call(reme, "memory_add", payload)
    emit(
        result,
        as_json,
        lambda r: f"added {r['record']['memory_id']} {r['record']['path']}{_history(r)}",
    )


@memory_group.command("get")
@click.argument("memory_id")
@scope_options
@workspace_options(remote=True, writes=False)
def get_command(opener: Callable[[], Any], as_json: bool, memory_id: str, **scope: Any) -> None:
    """Show one memory of the scope."""
    with opener() as reme:
        result = call(reme, "memory_get", {"memory_id": memory_id, **scope})
    emit(result, as_json, _show)


@memory_group.command("update")
@click.argument("memory_id")
@scope_options
@click.option("--content", help="New content.")
@click.option("--when-to-use", help="New when-to-use sentence.")
@click.option("--meta", "meta", multiple=True, metavar="KEY=VALUE", help="Set a metadata key.")
@click.option("--unset-meta", multiple=True, metavar="KEY", help="Remove a metadata key.")
@click.option("--source", "sources", multiple=True, metavar="LINK", help="Replace the sources.")
@click.option("--expected-hash", help="Refuse (conflict) unless the note's sha256 is this.")
@workspace_options(remote=True)
def update_command(opener: Callable[[], Any], as_json: bool, memory_id: str, **given: Any) -> None:
    """Change a memory's content, when-to-use, metadata or sources."""
    metadata = {**_metadata(given["meta"], "--meta"), **dict.fromkeys(given["unset_meta"])}
    payload = {
        "memory_id": memory_id,
        "user_name": given["user_name"],
        "task_name": given["task_name"],
        "tool_name": given["tool_name"],
        "content": given["content"],
        "when_to_use": given["when_to_use"],
        # None values are dropped from the payload, so removals are sent as an explicit mapping.
        "metadata": metadata or None,
        "sources": list(given["sources"]) or None,
        "expected_hash": given["expected_hash"],
    }
    with opener() as reme:
        result = call(reme, "memory_update", payload)

    def text(r: dict[str, Any]) -> str:
        line = f"{r['action']} {r['record']['memory_id']}{_history(r)}"
        if r.get("superseded"):
            line += f"\nkept the old statement as {r['superseded']['memory_id']} (superseded)"
        return line

    emit(result, as_json, text)


@memory_group.command("delete")
@click.argument("memory_id")
@scope_options
@click.option("--expected-hash", help="Refuse (conflict) unless the note's sha256 is this.")
@workspace_options(remote=True)
def delete_command(opener: Callable[[], Any], as_json: bool, memory_id: str, **given: Any) -> None:
    """Delete one memory of the scope."""
    with opener() as reme:
        result = call(reme, "memory_delete", {"memory_id": memory_id, **given})
    emit(result, as_json, lambda r: f"deleted {r['record']['memory_id']}{_history(r)}")


@memory_group.command("delete-all")
@scope_options
@workspace_options(remote=True)
def delete_all_command(opener: Callable[[], Any], as_json: bool, **scope: Any) -> None:
    """Delete every memory of one scope (a scope is required)."""
    with opener() as reme:
        result = call(reme, "memory_delete_all", scope)
    emit(result, as_json, lambda r: f"deleted {len(r['deleted'])} memories{_history(r)}")


@memory_group.command("list")
@scope_options
@click.option("--text", help="Keep memories whose content or when-to-use contains this.")
@click.option("--meta", "meta", multiple=True, metavar="KEY=VALUE", help="Metadata must match.")
@click.option("--since", help="Updated at or after (ISO date or time).")
@click.option("--until", help="Updated at or before (ISO date or time).")
@click.option(
    "--status",
    "statuses",
    multiple=True,
    type=click.Choice(["active", "archived", "superseded"]),
    help="Statuses to include (default: active).",
)
@click.option("--sort-key", default="updated", show_default=True, help="Or metadata.<key>.")
@click.option("--reverse/--no-reverse", default=True, show_default=True)
@click.option("--limit", type=click.IntRange(min=1, max=1000))
@workspace_options(remote=True, writes=False)
def list_command(opener: Callable[[], Any], as_json: bool, **given: Any) -> None:
    """List the memories of one scope."""
    filters: dict[str, Any] = {
        "text": given["text"],
        "metadata": _metadata(given["meta"], "--meta"),
        "since": given["since"],
        "until": given["until"],
    }
    if given["statuses"]:
        filters["statuses"] = list(given["statuses"])
    payload = {
        "user_name": given["user_name"],
        "task_name": given["task_name"],
        "tool_name": given["tool_name"],
        "filters": {k: v for k, v in filters.items() if v is not None},
        "sort_key": given["sort_key"],
        "reverse": given["reverse"],
        "limit": given["limit"],
    }
    with opener() as reme:
        result = call(reme, "memory_list", payload)
    emit(result, as_json, lambda r: "\n".join(_line(x) for x in r["records"]) or "no memories")


@memory_group.command("retrieve")
@click.argument("query")
@scope_options
@click.option("--limit", type=click.IntRange(min=1, max=50), default=5, show_default=True)
@click.option("--min-score", type=click.FloatRange(0, 1))
@click.option(
    "--status",
    "statuses",
    multiple=True,
    type=click.Choice(["active", "archived", "superseded"]),
    help="Statuses to search (default: active); a superseded hit names its newer memory.",
)
@workspace_options(remote=True, writes=False)
def retrieve_command(opener: Callable[[], Any], as_json: bool, query: str, **given: Any) -> None:
    """Search the memories of one scope."""
    payload = {"query": query, **given, "statuses": list(given["statuses"]) or None}
    with opener() as reme:
        result = call(reme, "memory_retrieve", payload)

    def text(r: dict[str, Any]) -> str:
        lines = [f"{hit['score']:.3f}  {_line(hit['record'])}" for hit in r["hits"]]
        return "\n".join(lines) or "no memories found"

    emit(result, as_json, text)


@memory_group.command("summarize")
@scope_options
@click.option(
    "--messages",
    "messages_file",
    type=click.File("r", encoding="utf-8"),
    default="-",
    help="JSON list of {role, content} messages (default: standard input).",
)
@click.option("--source", "sources", multiple=True, metavar="LINK", help="A note they come from.")
@workspace_options(remote=True)
def summarize_command(
    opener: Callable[[], Any], as_json: bool, messages_file: TextIO, **given: Any
) -> None:
    """Extract the scope's memories from a conversation with the model."""
    try:
        messages = json.loads(messages_file.read())
    except ValueError as exc:
        raise RemeError(f"--messages: not JSON: {exc}") from None
    if isinstance(messages, dict) and "messages" in messages:
        messages = messages["messages"]
    payload = {
        "messages": messages,
        "user_name": given["user_name"],
        "task_name": given["task_name"],
        "tool_name": given["tool_name"],
        "sources": list(given["sources"]),
    }
    with opener() as reme:
        result = call(reme, "memory_summarize", payload)

    def text(r: dict[str, Any]) -> str:
        lines = [
            f"{len(r['added'])} added, {len(r['updated'])} updated, "
            f"{len(r['unchanged'])} unchanged, {len(r['skipped'])} skipped{_history(r)}"
        ]
        lines += [f"+ {_line(x)}" for x in r["added"]]
        lines += [f"~ {_line(x)}" for x in r["updated"]]
        lines += [f"! {w}" for w in r["warnings"]]
        # memory.review: queue: proposals instead of records.
        lines += [f"? proposed {p}: reme review show {p}" for p in r.get("proposals", [])]
        return "\n".join(lines)

    emit(result, as_json, text)


COMMANDS = [memory_group]
