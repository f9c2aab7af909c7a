"""`reme mcp`: MCP over stdio, for clients that spawn their server (Claude Code, desktop apps)."""

from __future__ import annotations

from pathlib import Path

import click

from reme_core.cli.options import (
    config_file_option,
    open_workspace,
    overrides_option,
    workspace_option,
)
from reme_core.runtime import Reme


@click.command("mcp")
@workspace_option
@config_file_option
@overrides_option
def mcp_command(
    workspace: Path | None, config_file: Path | None, overrides: tuple[str, ...]
) -> None:
    """Serve MCP over stdin/stdout (every tool: the client spawned this process, so it is
    the workspace's owner). stdout carries only the protocol; logs go to stderr."""
    # Imported here: the MCP SDK takes a noticeable part of a second to import, which every
    # other command would pay at startup.
    from reme_core.server.mcp_server import DEFAULT_WORKSPACE, run_stdio

    reme: Reme = open_workspace(
        workspace, config_file, overrides, busy="connect the client to {url}/mcp instead"
    )
    with reme:
        # Catch up with edits made while no server ran; vectors embed in the background.
        reme.index(vectors="background")
        # A session lasts as long as the client: keep the index current with outside edits.
        watcher = reme.watch()
        try:
            run_stdio(lambda _name: reme, [DEFAULT_WORKSPACE])
        finally:
            watcher.stop()


COMMANDS = [mcp_command]
