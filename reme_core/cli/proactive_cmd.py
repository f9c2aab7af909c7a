"""``reme proactive run|list``: the follow-up topics kept from the daily notes.

``run`` runs the ``proactive`` pipeline (operation ``proactive_run``), ``list`` reads the topics
(operation ``proactive``): through the running server when there is one, else in-process.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from reme_core.cli.group import RemeGroup
from reme_core.cli.memory_cmd import call
from reme_core.cli.options import emit, workspace_options

STATES = ["raised", "open", "resolved", "snoozed", "all"]


@click.group("proactive", cls=RemeGroup)
def proactive_group() -> None:
    """Follow-up topics from the daily notes: run the pipeline, list what to raise next."""


@proactive_group.command("run")
@click.option("--dry-run", is_flag=True, help="Ask and verify, but write nothing.")
@click.option("--today", metavar="YYYY-MM-DD", help="The day the note is written for.")
@workspace_options(remote=True)
def run_command(opener: Callable[[], Any], as_json: bool, dry_run: bool, today: str | None) -> None:
    """Update the topics from the daily notes changed since the last run.

    Exits 1 when a batch's answer was rejected (nothing of it is written; the next run retries).
    """
    with opener() as reme:
        result = call(reme, "proactive_run", {"dry_run": dry_run or None, "today": today})
    emit(result, as_json, _run_text)
    if result["outputs"].get("failed"):
        click.echo("a batch was rejected; its notes are read again next run", err=True)
        click.get_current_context().exit(1)


@proactive_group.command("list")
@click.option(
    "--state",
    type=click.Choice(STATES),
    default="raised",
    show_default=True,
    help="raised: what the note raises (open, and snoozed topics now due).",
)
@click.option("--today", metavar="YYYY-MM-DD", help="The day snoozed topics are compared with.")
@workspace_options(remote=True, writes=False)
def list_command(opener: Callable[[], Any], as_json: bool, state: str, today: str | None) -> None:
    """List the follow-up topics (what to raise next session by default)."""
    with opener() as reme:
        result = call(reme, "proactive", {"state": state, "today": today})
    emit(result, as_json, _list_text)


def _run_text(result: dict[str, Any]) -> str:
    out = result["outputs"]
    lines = [f"proactive: {len(out.get('pending', []))} changed note(s), {len(out['read'])} read"]
    for kind in ("new", "resolved", "reopened", "mentioned", "snoozed"):
        if out.get(kind):
            lines.append(f"{kind}: {', '.join(out[kind])}")
    if out.get("waiting"):
        lines.append(f"proposal {out['waiting']} waits for review: `reme review list`")
    for proposal in out.get("proposals") or []:
        lines.append(f"proposed {proposal['id']} ({proposal['status']}), nothing written")
    for failure in out.get("failed") or []:
        lines.append(f"rejected ({', '.join(failure['notes'])}): {failure['reason']}")
    if out.get("deferred"):
        lines.append(f"{len(out['deferred'])} note(s) wait for the next run (max_batches)")
    if out.get("written"):
        lines.append(f"written: {', '.join(out['written'])}")
    lines.append(f"{out.get('open', 0)} topic(s) to raise")
    return "\n".join(lines)


def _list_text(result: dict[str, Any]) -> str:
    counts = ", ".join(f"{n} {state}" for state, n in result["counts"].items())
    lines = [f"{result['path']}: {counts or 'no topics'}"]
    for topic in result["topics"]:
        extra = topic.get("resolved_by") or topic.get("snoozed_until") or ""
        lines.append(
            f"{topic['id']}  {topic['state']:<8}  {topic['last_seen']}  {topic['text']}"
            + (f"  ({extra})" if extra else "")
        )
    if not result["topics"]:
        lines.append(f"nothing {result['state']}")
    return "\n".join(lines)


COMMANDS = [proactive_group]
