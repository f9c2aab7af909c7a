"""`reme init|index|reindex|optimize|watch|status`."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import click

from reme_core.cli.options import emit, workspace_options
from reme_core.cli.signals import stop_on_interrupt_or_term
from reme_core.index.indexer import IndexReport
from reme_core.runtime import Reme
from reme_core.server.scheduler import STATE_FILE, schedule_status
from reme_core.workspace import init_workspace


@click.command("init")
@click.argument("directory", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def init_command(directory: Path | None, as_json: bool) -> None:
    """Lay out a workspace: daily/, digest/{personal,procedure,wiki}/, resource/, sessions/, .reme/."""
    root = (directory or Path.cwd()).expanduser().resolve()
    created = init_workspace(root)
    emit(
        {"workspace": str(root), "created": created},
        as_json,
        lambda r: (
            f"workspace ready at {r['workspace']}"
            + (f" (created {', '.join(r['created'])})" if r["created"] else "")
        ),
    )


def _report_text(report: IndexReport) -> str:
    repaired = f", repaired {len(report.repaired)}" if report.repaired else ""
    embedding = f" (embedding {report.embed_seconds:.2f}s)" if report.embed_seconds else ""
    lines = [
        f"indexed {len(report.indexed)}, removed {len(report.removed)}, unchanged {report.unchanged}"
        f"{repaired} in {report.seconds:.2f}s{embedding}"
    ]
    lines += [f"  repaired drift: {line}" for line in report.drift]
    lines += [f"  problem: {path}: {message}" for path, message in report.problems.items()]
    return "\n".join(lines)


@click.command("index")
@workspace_options(
    busy="its watcher already indexes every edit (`reme reindex` rebuilds through it)"
)
def index_command(opener: Callable[[], Reme], as_json: bool) -> None:
    """Index what changed since the last run (by content hash)."""
    with opener() as reme:
        emit(reme.index(progress=_progress), as_json, _report_text)


def _progress(done: int, total: int) -> None:
    """Embedding progress on stderr, one updating line."""
    click.echo(f"\rembedding: {done}/{total} chunks", err=True, nl=done >= total)


@click.command("reindex")
@workspace_options(remote=True)
def reindex_command(opener: Callable[[], Reme], as_json: bool) -> None:
    """Rebuild every projection from the notes (through the server when one is running)."""
    with opener() as reme:
        emit(reme.reindex(progress=_progress), as_json, _report_text)


@click.command("optimize")
@workspace_options(
    busy="it optimizes on its schedule (server.schedule), or stop it and run this again"
)
def optimize_command(opener: Callable[[], Reme], as_json: bool) -> None:
    """Compact incremental index state (the keyword index's delta segment)."""
    with opener() as reme:
        reme.index()
        reme.optimize()
        emit(
            reme.status(),
            as_json,
            lambda s: (
                f"optimized: keyword index {json.dumps(s['keyword_index'])}\n{_vectors_line(s['vectors'])}"
            ),
        )


@click.command("status")
@workspace_options(remote=True, writes=False)
def status_command(opener: Callable[[], Reme], as_json: bool) -> None:
    """Files, chunks, index state, unresolved links, files that could not be indexed, and the
    schedule: each job's last run (and its result) and next run."""
    with opener() as reme:
        status = reme.status()
        # Read from the state file a server's scheduler writes; no server needs to be running.
        status["schedule"] = schedule_status(reme.settings, reme.state_dir / STATE_FILE)

    def text(s: dict) -> str:
        lines = [
            f"workspace: {s['workspace']}",
            f"files: {s['files']}  chunks: {s['chunks']}  unresolved links: {s['unresolved_links']}",
            f"keyword index: {json.dumps(s['keyword_index'])}",
            _vectors_line(s["vectors"]),
        ]
        lines += [f"problem: {p}: {m}" for p, m in s["problems"].items()]
        lines += [f"problem: drift: {line}" for line in s.get("drift", {}).get("problems", [])]
        lines += _schedule_lines(s["schedule"])
        return "\n".join(lines)

    emit(status, as_json, text)


def _schedule_lines(schedule: dict) -> list[str]:
    scheduler = schedule["scheduler"]
    if scheduler["running"]:
        state = f"running since {_when(scheduler['started'])} (pid {scheduler['pid']})"
    elif scheduler["started"] is None:
        state = "never started (it runs inside `reme serve`)"
    else:
        state = f"not running (last started {_when(scheduler['started'])})"
    lines = [f"schedule ({schedule['timezone']}): {state}"]
    for name, job in schedule["jobs"].items():
        if not job["enabled"]:
            lines.append(f"  {name}: off")
            continue
        lines.append(f"  {name}: {job['cron']}  next {_when(job['next'])}")
        if job["running"]:
            lines.append(f"    running since {_when(job['running']['started'])}")
        last = job["last"]
        if last is None:
            lines.append("    last: never")
        else:
            result = f"ok: {last['summary']}" if last["ok"] else f"FAILED: {last['error']}"
            catch_up = " (catch-up)" if last["trigger"] == "catch_up" else ""
            lines.append(f"    last: {_when(last['started'])}{catch_up} {result}")
    if schedule["problem"]:
        lines.append(f"  problem: {schedule['problem']}")
    return lines


def _when(iso: str | None) -> str:
    # "2024-03-31T03:00:00+02:00" -> "2024-03-31 03:00"; the zone is on the section's title line.
    return iso[:16].replace("T", " ") if iso else "-"


def _vectors_line(vectors: dict) -> str:
    state = vectors["state"]
    if state in ("off", "unavailable"):
        return f"vectors: {state} ({vectors.get('reason')})"
    line = f"vectors: {state}, {vectors['embedded']}/{vectors['total']} chunks, model {vectors['model']}, store {vectors['store']}"
    if vectors.get("last_error"):
        line += f"; last error: {vectors['last_error']}"
    return line


@click.command("watch")
@workspace_options(busy="its watcher already indexes every edit made in this workspace")
def watch_command(opener: Callable[[], Reme], as_json: bool) -> None:
    """Index now, then keep indexing edits made outside reme until interrupted."""
    with opener() as reme:
        emit(reme.index(), as_json, _report_text)
        watcher = reme.watch(
            on_report=lambda r: (
                emit(r, as_json, _report_text) if r.indexed or r.removed or r.problems else None
            )
        )
        stop_on_interrupt_or_term()
        click.echo(f"watching {reme.root} (Ctrl-C or SIGTERM to stop)", err=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
        finally:
            watcher.stop()


COMMANDS = [
    init_command,
    index_command,
    reindex_command,
    optimize_command,
    status_command,
    watch_command,
]
