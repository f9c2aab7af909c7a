"""`reme forget PATH | --query Q [--purge] [--yes]` and `reme expire`: the lifecycle operations
(``reme_core.service.lifecycle_ops``), in-process or through the server that owns the workspace,
with the same input model and the same report either way."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import click
from pydantic import ValidationError

from reme_core.cli.options import emit, workspace_options
from reme_core.errors import RemeError


def _caller(reme: Any, operation: str) -> Callable[[dict[str, Any]], Any]:
    """Call ``operation`` on an open workspace or through its server (``RemoteReme``)."""
    client = getattr(reme, "client", None)
    if client is not None:
        return lambda payload: client.call(operation, payload)
    from reme_core.service.table import OPERATIONS

    def call(payload: dict[str, Any]) -> Any:
        try:
            return OPERATIONS[operation].call(reme, payload)
        except ValidationError as exc:
            raise RemeError(f"{operation}: {exc.errors()[0]['msg']}") from None

    return call


def _with(report: dict[str, Any], purged: str, rewrites: dict[str, Any], verb: str) -> list[str]:
    """The files that go with the purged notes, and the pipeline files rewritten without them."""
    lines = [f"{purged} {f} (the source of {n})" for f, n in report.get("purged_with", {}).items()]
    kept = report.get("kept_sources") or {}
    lines += [f"kept {f} (the source of {n}), not noted again" for f, n in kept.items()]
    for rel, what in rewrites.items():
        lines.append(f"{verb} {rel}:")
        lines += [f"  {line}" for line in what]
    return lines


def _describe(report: dict[str, Any]) -> str:
    paths = report["paths"]
    if report["dry_run"]:
        verb = "purge" if report["mode"] == "purge" else "archive"
        lines = [f"would {verb}: " + (", ".join(paths) or "nothing")]
        lines += _with(report, "would also purge", report.get("rewrites") or {}, "would rewrite")
        return "\n".join(lines)
    if report["mode"] == "archive":
        lines = [f"archived {', '.join(paths)}" if paths else "nothing to archive"]
        if report["unchanged"]:
            lines.append("already archived: " + ", ".join(report["unchanged"]))
        if report["history"]:
            lines.append(
                f"history entry {report['history']} (undo: reme revert {report['history']})"
            )
        if report["history_error"]:
            lines.append(f"not recorded in history: {report['history_error']}")
        return "\n".join(lines)
    removed = report["removed"] or {}
    counts = ", ".join(
        f"{removed.get(key, 0)} {label}"
        for key, label in (
            ("chunks", "chunks"),
            ("vectors", "vectors"),
            ("cached_embeddings", "cached embeddings"),
            ("links", "links"),
            ("tags", "tags"),
            ("journal_entries", "journal entries"),
            ("history_commits_rewritten", "history commits rewritten"),
        )
    )
    lines = [f"purged {', '.join(paths)}: {counts}"]
    lines += _with(report, "also purged", removed.get("rewritten") or {}, "rewritten")
    lines += [f"not rewritten: {why}" for why in removed.get("rewritten_errors") or []]
    if removed.get("proposals"):
        lines.append("proposals removed: " + ", ".join(removed["proposals"]))
    cited = report.get("citations") or {}
    for note, citing in (cited.get("citing") or {}).items():
        edited = " (unlinked)" if note in cited.get("unlinked", []) else ""
        lines.append(f"cited by {note}{edited}:")
        lines += [f"  {c['line']}: {c['text']}" for c in citing]
    if cited.get("unlinked"):
        lines.append(
            f"{cited['lines_removed']} citing line(s) removed; history entry {cited['history']}"
        )
    if report["remaining"]:
        lines.append("still found in: " + ", ".join(report["remaining"]))
    else:
        lines.append("no file under .reme/, no workspace file and no history object holds it")
    return "\n".join(lines)


@click.command("forget")
@click.argument("path", required=False)
@click.option("--query", "-q", help="Forget the notes whose text holds these words instead.")
@click.option(
    "--limit", type=click.IntRange(1, 50), default=10, show_default=True, help="With --query."
)
@click.option(
    "--purge", is_flag=True, help="Remove the note and every trace of it (not revertible)."
)
@click.option(
    "--with-digests",
    is_flag=True,
    help="With --purge: also remove the links to it from the digest notes citing it.",
)
@click.option(
    "--keep-source",
    is_flag=True,
    help="With --purge: keep a resource note's file under resource/ (not noted again).",
)
@click.option("--yes", "-y", is_flag=True, help="Do not ask before a purge.")
@click.option("--dry-run", is_flag=True, help="Only list the notes that would be forgotten.")
@workspace_options(remote=True)
def forget_command(
    opener: Callable[[], Any],
    as_json: bool,
    path: str | None,
    query: str | None,
    limit: int,
    purge: bool,
    with_digests: bool,
    keep_source: bool,
    yes: bool,
    dry_run: bool,
) -> None:
    """Forget a note (PATH) or the notes holding --query's words: archived by default.

    Archiving sets status: archived (search leaves it out) as one history entry that `reme
    revert` undoes. --purge removes the note, its chunks, vectors, links, tags, cached
    embeddings, the review proposals that mention it and every version of it in the history,
    then reports what it removed and whether any file still holds it; it lists the notes and
    asks first, and --yes skips the question (under --json it is required: JSON never prompts).
    """
    payload: dict[str, Any] = {"path": path, "query": query, "limit": limit, "purge": purge}
    if with_digests:
        payload["with_digests"] = True
    if keep_source:
        payload["keep_sources"] = True
    with opener() as reme:
        call = _caller(reme, "forget")
        if purge and not dry_run and not (yes or as_json):
            plan = call({**payload, "dry_run": True})
            going = [*plan["paths"], *plan.get("purged_with", {})]
            click.echo("purge (cannot be undone): " + ", ".join(going), err=True)
            if not click.confirm("Purge?", default=False, err=True):
                raise RemeError("purge cancelled; nothing was changed")
            yes = True
        report = call({**payload, "dry_run": dry_run, "confirm": yes})
    emit(report, as_json, _describe)


@click.command("expire")
@click.option("--dry-run", is_flag=True, help="Only list the notes that expired.")
@click.option(
    "--today", type=click.DateTime(formats=["%Y-%m-%d"]), help="Judge expiry as of this day."
)
@workspace_options(remote=True)
def expire_command(
    opener: Callable[[], Any], as_json: bool, dry_run: bool, today: dt.datetime | None
) -> None:
    """Archive the notes whose expires: day has come, or whose folder's lifecycle.expire passed.

    The scheduler's expire job does the same (server.schedule.expire); search leaves expired
    notes out either way. One history entry, which `reme revert` undoes.
    """
    payload: dict[str, Any] = {"dry_run": dry_run}
    if today is not None:
        payload["today"] = today.date().isoformat()
    with opener() as reme:
        report = _caller(reme, "expire")(payload)

    def text(r: dict[str, Any]) -> str:
        verb = "would archive" if r["dry_run"] else "archived"
        lines = [f"{verb}: " + (", ".join(sorted(r["archived"])) or "nothing")]
        lines += [f"unreadable expires: {why}" for why in r["invalid"].values()]
        if r.get("history"):
            lines.append(f"history entry {r['history']}")
        return "\n".join(lines)

    emit(report, as_json, text)


COMMANDS = [forget_command, expire_command]
