"""`reme codex capture [THREAD_ID...] [--all]`: save Codex sessions into the workspace now.

Codex's notify program captures the session after every turn; this is the same call by hand: for
the sessions named, or with ``--all`` every rollout under ``$CODEX_HOME`` (sessions from before
reme was connected, or one whose notify call failed while nothing else retried it). Each runs
``auto_memory_codex``, which reads only what it has not saved yet, so a rerun is cheap and
captures nothing twice. Through a running server when one holds the workspace.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from reme_core.api import Reme, RemeError, emit, workspace_options
from reme_plugins.auto_memory.codex import codex_home, rollouts

PIPELINE = "auto_memory_codex"


@click.command("capture")
@click.argument("thread_ids", nargs=-1, metavar="[THREAD_ID]...")
@click.option(
    "--all", "every", is_flag=True, help="Every Codex session under $CODEX_HOME (else ~/.codex)."
)
@workspace_options(remote=True)
def capture_command(
    opener: Callable[[], Reme],
    as_json: bool,
    thread_ids: tuple[str, ...],
    every: bool,
) -> None:
    """Capture Codex sessions into daily notes now (the notify program does it after each turn).

    Exits 1 when a session failed (its turns stay in Codex's file for the next capture).
    """
    if every == bool(thread_ids):
        raise click.UsageError("name THREAD_IDs, or --all")
    if every:
        found = sorted({sid for sid, _ in rollouts(codex_home())})
    else:
        found = list(dict.fromkeys(thread_ids))
    rows: list[dict[str, Any]] = []
    with opener() as reme:
        for session_id in found:
            try:
                out = reme.run(PIPELINE, {"session_id": session_id}).outputs
            except RemeError as exc:  # one session's failure does not stop the others
                rows.append({"session_id": session_id, "status": "failed", "error": str(exc)})
                continue
            row = {k: out.get(k) for k in ("session_id", "status", "note", "added")}
            unknown = (out.get("codex") or {}).get("unknown_lines")
            rows.append(row | ({"unknown_lines": unknown} if unknown else {}))
    emit(rows, as_json, _render)
    if any(row["status"] == "failed" for row in rows):
        click.echo("some sessions failed; their turns wait for the next capture", err=True)
        click.get_current_context().exit(1)


def _render(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "no Codex sessions found"
    lines = []
    for row in rows:
        detail = row.get("error") or " ".join(
            str(part) for part in (row.get("note"), _added(row.get("added"))) if part
        )
        lines.append(f"{row['session_id']}  {row['status']}  {detail}".rstrip())
        if row.get("unknown_lines"):
            unknown = row["unknown_lines"]
            lines.append(
                f"  {unknown['count']} line(s) in a format this reme does not know (first at "
                f"byte {unknown['first']}: {unknown['reason']}); read again on every capture"
            )
    return "\n".join(lines)


def _added(count: Any) -> str:
    return f"(+{count} turn(s))" if isinstance(count, int) and count else ""
