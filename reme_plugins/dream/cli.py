"""`reme dream [--date D] [--dry-run] [--json]`: run the dream pipeline, print a row per unit."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from reme_core.api import (
    ConfigError,
    PipelineResult,
    PipelineRun,
    Reme,
    RemoteReme,
    catch_up,
    emit,
    workspace_options,
)

PIPELINE = "dream"
REASON_CHARS = 100
DEFAULT_STEPS = "[dream_extract, dream_integrate, dream_finish, auto_tag]"


@click.command("dream")
@click.option("--date", "day", metavar="YYYY-MM-DD", help="Only that day's daily notes.")
@click.option("--dry-run", is_flag=True, help="Decide and verify, but write nothing.")
@workspace_options(remote=True)
def dream_command(
    opener: Callable[[], Reme], as_json: bool, day: str | None, dry_run: bool
) -> None:
    """Consolidate daily notes into digest nodes (CREATE, CORROBORATE, REFINE, CORRECT).

    Exits 1 when a unit or an extraction batch failed (it is retried on the next run).
    """
    params: dict[str, Any] = {"dry_run": dry_run}
    if day is not None:
        params["date"] = day
    with opener() as reme:
        if PIPELINE not in reme.settings.pipelines:
            raise ConfigError(
                f"no `{PIPELINE}` pipeline is configured; add pipelines.{PIPELINE}.steps: "
                f"{DEFAULT_STEPS}"
            )
        if not isinstance(reme, RemoteReme):  # a server checks its own model
            # Say so before anything runs, rather than as a step failure.
            PipelineRun(reme=reme, name=PIPELINE, llm=reme.llm_for(PIPELINE)).require_llm(PIPELINE)
        catch_up(reme)  # edits made outside reme count as changes to consolidate
        result = reme.run(PIPELINE, params)
    emit(result, as_json, render)
    failures = len(result.outputs.get("failed", [])) + len(
        result.outputs.get("extract_failures", [])
    )
    if failures:
        # Not a RemeError: under --json that would print a second JSON document.
        click.echo(f"{failures} unit(s) or batch(es) failed; the next run retries them", err=True)
        click.get_current_context().exit(1)


def render(result: PipelineResult) -> str:
    """The per-unit table and a summary."""
    out = result.outputs
    decisions: list[dict[str, Any]] = out.get("decisions", [])
    rows = [("UNIT", "VERB", "TARGET", "RESULT", "REASON")]
    for d in decisions:
        reason = " ".join((d.get("reason") or "").split())
        if len(reason) > REASON_CHARS:
            reason = reason[: REASON_CHARS - 3] + "..."
        rows.append((d["name"], d.get("verb") or "-", d.get("target") or "-", d["result"], reason))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = []
    dry = " (dry run: nothing written)" if result.params.get("dry_run") else ""
    lines.append(
        f"dream: {len(out.get('pending', []))} changed note(s), {len(decisions)} unit(s){dry}"
    )
    if decisions:
        for row in rows:
            cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
            lines.append("  ".join([*cells, row[4]]).rstrip())
    else:
        lines.append("nothing to consolidate")
    counts: dict[str, int] = {}
    for d in decisions:
        counts[d["result"]] = counts.get(d["result"], 0) + 1
    if counts:
        lines.append(", ".join(f"{n} {result}" for result, n in sorted(counts.items())))
    if out.get("proposals"):
        lines.append(
            f"{len(out['proposals'])} change(s) proposed, nothing written: "
            "`reme review list` shows them, `reme review approve|reject` decides"
        )
    if out.get("reviewed"):
        lines.append(f"{len(out['reviewed'])} unit(s) left out: review already holds them")
    if out.get("deferred"):
        lines.append(f"{len(out['deferred'])} more unit(s) queued for the next run (max_units)")
    for failure in out.get("extract_failures", []):
        lines.append(f"extraction failed for {', '.join(failure['paths'])}: {failure['reason']}")
    for path, problem in sorted(out.get("problems", {}).items()):
        lines.append(f"skipped {path}: {problem}")
    checkpoint = out.get("checkpoint") or {}
    if checkpoint.get("saved"):
        lines.append(
            f"checkpoint: {checkpoint['notes']} note(s) consolidated, "
            f"{checkpoint['queued']} unit(s) queued ({checkpoint['failed']} failed)"
        )
    return "\n".join(lines)
