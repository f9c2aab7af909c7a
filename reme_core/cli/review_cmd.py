"""``reme review list|show|approve|reject``: the review queue from the command line.

Pipelines set to ``review: queue`` (``pipelines.dream.review``, ``pipelines.auto_tag.review``,
``memory.review``) propose changes instead of making them. Each command is one operation of the
service layer (``review_list``, ``review_show``, ``review_approve``, ``review_reject``): through
the running server when there is one (its token profile applies: approving needs admin), else
in-process through the same operation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from reme_core.cli.group import RemeGroup
from reme_core.cli.memory_cmd import call
from reme_core.cli.options import emit, workspace_options

VERBS = ["CREATE", "CORROBORATE", "REFINE", "CORRECT", "TAG", "MEMORY"]
STATUSES = ["pending", "approved", "rejected", "stale", "all"]
NOTE_CHARS = 60

verb_option = click.option(
    "--verb",
    type=click.Choice(VERBS, case_sensitive=False),
    callback=lambda _c, _p, v: v.upper() if v else v,
    help="Every pending proposal of this verb.",
)
pipeline_option = click.option(
    "--pipeline", help="Every pending proposal of this pipeline (dream, auto_tag, ...)."
)
by_option = click.option("--by", metavar="NAME", help="Who decides (recorded with the proposal).")


@click.group("review", cls=RemeGroup)
def review_group() -> None:
    """Proposals of pipelines set to `review: queue`: list, show, approve, reject."""


@review_group.command("list")
@click.option(
    "--status", type=click.Choice(STATUSES), default="pending", show_default=True, help="Status."
)
@click.option("--verb", type=click.Choice(VERBS, case_sensitive=False), help="Only this verb.")
@click.option("--pipeline", help="Only this pipeline's proposals.")
@click.option("--target", metavar="PATH", help="Only proposals for this note.")
@click.option("--limit", type=click.IntRange(min=1, max=1000))
@workspace_options(remote=True, writes=False)
def list_command(opener: Callable[[], Any], as_json: bool, **given: Any) -> None:
    """List proposals, oldest first (pending ones by default)."""
    if given["verb"]:
        given["verb"] = given["verb"].upper()
    with opener() as reme:
        result = call(reme, "review_list", given)
    emit(result, as_json, _table)


@review_group.command("show")
@click.argument("proposal_id", metavar="ID")
@workspace_options(remote=True, writes=False)
def show_command(opener: Callable[[], Any], as_json: bool, proposal_id: str) -> None:
    """Show one proposal: what, why, the checks it passed and the diff."""
    with opener() as reme:
        result = call(reme, "review_show", {"id": proposal_id})
    emit(result, as_json, _show)


@review_group.command("approve")
@click.argument("ids", nargs=-1, metavar="[ID]...")
@verb_option
@pipeline_option
@by_option
@workspace_options(remote=True)
def approve_command(
    opener: Callable[[], Any],
    as_json: bool,
    ids: tuple[str, ...],
    verb: str | None,
    pipeline: str | None,
    by: str | None,
) -> None:
    """Apply proposals: each ID, or with --verb/--pipeline every pending one of them.

    Each is verified again against the note as it is now and written only if it still holds;
    one whose note changed since is refused as stale. Exits 1 when any was refused.
    """
    payload = {"ids": list(ids), "verb": verb, "pipeline": pipeline, "by": by}
    with opener() as reme:
        result = call(reme, "review_approve", payload)
    _decided(result, as_json)


@review_group.command("reject")
@click.argument("ids", nargs=-1, metavar="[ID]...")
@click.option("--reason", required=True, help="Why the change is wrong (recorded).")
@verb_option
@pipeline_option
@by_option
@workspace_options(remote=True)
def reject_command(
    opener: Callable[[], Any],
    as_json: bool,
    ids: tuple[str, ...],
    reason: str,
    verb: str | None,
    pipeline: str | None,
    by: str | None,
) -> None:
    """Reject proposals with a reason; the pipeline does not propose the same change again."""
    payload = {"ids": list(ids), "verb": verb, "pipeline": pipeline, "by": by, "reason": reason}
    with opener() as reme:
        result = call(reme, "review_reject", payload)
    _decided(result, as_json)


def _decided(result: dict[str, Any], as_json: bool) -> None:
    emit(result, as_json, _decisions)
    if result["refused"]:
        # Not a RemeError: under --json that would print a second JSON document.
        click.echo(f"{len(result['refused'])} proposal(s) refused", err=True)
        click.get_current_context().exit(1)


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= NOTE_CHARS else text[: NOTE_CHARS - 3] + "..."


def _table(result: dict[str, Any]) -> str:
    proposals = result["proposals"]
    if not proposals:
        return "no proposals" + _counts(result)
    rows = [("ID", "VERB", "TARGET", "STATUS", "DIFF", "CREATED", "NOTE")]
    for p in proposals:
        status = p["status"] + (" (target changed)" if p.get("target_changed") else "")
        if p.get("base_kept_as"):
            status = p["status"] + f" (superseded: base kept as {p['base_kept_as']})"
        elif p.get("superseded_by"):
            status += f" (superseded by {p['superseded_by']})"
        diff = f"+{p['added_lines']}/-{p['removed_lines']}"
        rows.append(
            (p["id"], p["verb"], p["target"], status, diff, p["created"][:16], _short(p["note"]))
        )
    widths = [max(len(row[i]) for row in rows) for i in range(6)]
    lines = [
        "  ".join([*(c.ljust(w) for c, w in zip(row[:6], widths, strict=True)), row[6]]).rstrip()
        for row in rows
    ]
    if result["total"] > len(proposals):
        lines.append(f"... {result['total'] - len(proposals)} more (--limit)")
    return "\n".join(lines) + _counts(result)


def _counts(result: dict[str, Any]) -> str:
    counts = ", ".join(f"{n} {status}" for status, n in result["counts"].items() if n)
    problems = "".join(f"\nunreadable {k}: {v}" for k, v in result.get("problems", {}).items())
    return (f"\n({counts})" if counts else "") + problems


def _show(p: dict[str, Any]) -> str:
    lines = [f"proposal {p['id']}: {p['verb']} {p['target']} [{p['status']}]"]
    lines.append(f"from {p['pipeline']} run {p['run_id']} at {p['created']}")
    if p["note"]:
        lines.append(f"why: {p['note']}")
    if p["sources"]:
        lines.append("sources: " + ", ".join(p["sources"]))
    if p["status"] == "pending" and p.get("target_changed"):
        lines.append("the target changed since: approving it would be refused as stale")
    if p.get("base_kept_as"):
        lines.append(
            f"the target was superseded since: the version proposed against is kept as "
            f"{p['base_kept_as']}; the pipeline proposes again from the current note"
        )
    if p.get("superseded_by"):
        lines.append(f"the target is superseded by {p['superseded_by']}")
    if p.get("decided"):
        by = f" by {p['decided_by']}" if p.get("decided_by") else ""
        lines.append(f"{p['status']} at {p['decided']}{by}")
    if p.get("reason"):
        lines.append(f"reason: {p['reason']}")
    if p.get("history"):
        lines.append(f"history: {p['history']}")
    if p["verdict"]:
        lines.append("checks passed:")
        lines += [f"  - {check}" for check in p["verdict"]]
    return "\n".join(lines) + "\n\n" + p["diff"].rstrip("\n")


def _decisions(result: dict[str, Any]) -> str:
    done = "approved" if result["action"] == "approve" else "rejected"
    lines = []
    for o in result["succeeded"]:
        extra = f" (history {o['history']})" if o.get("history") else ""
        note = f": {o['reason']}" if o.get("reason") and done == "approved" else ""
        lines.append(f"{done} {o['id']} {o['verb']} {o['target']}{extra}{note}")
    for o in result["refused"]:
        lines.append(f"refused {o['id']} {o['verb']} {o['target']} [{o['status']}]: {o['reason']}")
    return "\n".join(lines) or f"nothing to {result['action']}"


COMMANDS = [review_group]
