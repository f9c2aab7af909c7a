"""`reme integrate HOST`: connect an agent host to this workspace (and `--remove`, `--list`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from reme_core.cli.options import config_file_option, emit, locate_workspace, overrides_option


@click.command("integrate")
@click.argument("host_name", metavar="HOST", required=False)
@click.option(
    "--workspace",
    "-w",
    "folder",
    type=click.Path(file_okay=False, path_type=Path),
    envvar="REME_WORKSPACE",
    help="The workspace to connect (env REME_WORKSPACE, else config, else the nearest folder "
    "holding .reme/ from here up).",
)
@click.option(
    "--scope",
    type=click.Choice(["user", "project"]),
    default="user",
    show_default=True,
    help="user: the host's configuration in your home folder; project: the current folder's.",
)
@click.option("--dry-run", is_flag=True, help="Print what would change; change nothing.")
@click.option("--remove", is_flag=True, help="Put back what was there before and revoke the token.")
@click.option(
    "--list",
    "list_hosts",
    is_flag=True,
    help="The hosts reme knows: found (the program on PATH), config folder, connected.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@config_file_option
@overrides_option
def integrate_command(
    host_name: str | None,
    folder: Path | None,
    scope: str,
    dry_run: bool,
    remove: bool,
    list_hosts: bool,
    as_json: bool,
    config_file: Path | None,
    overrides: tuple[str, ...],
) -> None:
    """Connect an agent host (claude-code, codex, hermes, openclaw) to this workspace: MCP, hooks, a write token.

    Every file it changes is backed up under .reme/integrations/ and every change is printed
    (secrets masked); a rerun changes nothing. --remove restores the files exactly and revokes
    the token. The admin token is never written into a host's configuration.
    """
    from reme_core.integrate import HOSTS, host
    from reme_core.integrate import connect as conn
    from reme_core.settings import load_settings

    if list_hosts == (host_name is not None):
        raise click.UsageError("give a HOST (see `reme integrate --list`), or --list")
    settings = load_settings(config_file, overrides)
    root = locate_workspace(folder, settings)
    settings = settings.model_copy(update={"workspace": root})
    project = Path.cwd()
    if list_hosts:
        rows = []
        for name in sorted(HOSTS):
            found = host(name)
            rows.append(
                {
                    "host": name,
                    **found.detect(),
                    "connected": conn.connected_scopes(found, settings, project),
                }
            )
        emit(rows, as_json, _list_lines)
        return
    assert host_name is not None
    target = host(host_name)
    action = conn.remove if remove else conn.connect
    emit(action(target, settings, scope, project, dry_run), as_json, _report_lines)


def _list_lines(rows: list[dict[str, Any]]) -> str:
    lines = []
    for row in rows:
        found = f"found ({row['program']})" if row["found"] else "not found"
        folder = "" if row["config_dir_present"] else " (absent)"
        connected = ", ".join(row["connected"]) or "no"
        lines.append(
            f"{row['host']:<12}  {found}  config: {row['config_dir']}{folder}  "
            f"connected: {connected}"
        )
    return "\n".join(lines)


def _report_lines(report: dict[str, Any]) -> str:
    lines = [
        f"{change['file']}: {change['key'] or '(file)'}: {_short(change['old'])} -> {_short(change['new'])}"
        for change in report["changes"]
    ]
    status = report["status"]
    prefix = "dry run, nothing changed: " if report["dry_run"] else ""
    token = (
        f" (token {report['token']}, profile write)"
        if report.get("token") and "connect" in status
        else ""
    )
    lines.append(
        f"{prefix}{report['host']} {status} ({report['scope']} scope) {'from' if 'remove' in status else 'to'} {report['workspace']}{token}"
    )
    return "\n".join(lines)


def _short(value: Any) -> str:
    import json

    return "(absent)" if value is None else json.dumps(value, ensure_ascii=False)


COMMANDS = [integrate_command]
