"""Options every workspace command shares, and helpers to open the workspace and print results."""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from reme_core.client import RemeClient, RemoteReme, discover, token_for
from reme_core.runtime import Reme
from reme_core.service.operations import plain
from reme_core.settings import load_settings

config_file_option = click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    envvar="REME_CONFIG",
    help="YAML config file (env REME_CONFIG).",
)
overrides_option = click.option(
    "--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a config key."
)
workspace_option = click.option(
    "--workspace",
    "-w",
    type=click.Path(file_okay=False, path_type=Path),
    envvar="REME_WORKSPACE",
    help="Workspace folder (env REME_WORKSPACE, else config `workspace`, else the current folder).",
)

LOCAL_ENV = "REME_LOCAL"
"""Set to 1 to make every command work in-process even when a server is running."""


def workspace_options(
    func: Callable[..., Any] | None = None, *, remote: bool = False
) -> Callable[..., Any]:
    """Add --workspace, --config, --set and --json, and pass an opener for the workspace.

    With ``remote=True`` the opener returns a ``RemoteReme`` when a server is running for the
    workspace (its writes then go through the one writer, and are indexed there), unless
    ``--set`` asks for a different configuration or ``REME_LOCAL=1``.
    """
    if func is None:
        return functools.partial(workspace_options, remote=remote)

    @workspace_option
    @config_file_option
    @overrides_option
    @click.option("--json", "as_json", is_flag=True, help="Print JSON.")
    @functools.wraps(func)
    def wrapper(
        workspace: Path | None,
        config_file: Path | None,
        overrides: tuple[str, ...],
        as_json: bool,
        **kwargs: Any,
    ) -> Any:
        def opener() -> Reme:
            if remote and not overrides:
                served = _served(workspace, config_file)
                if served is not None:
                    return served
            return Reme.open(workspace, config_file=config_file, overrides=overrides)

        return func(opener=opener, as_json=as_json, **kwargs)

    return wrapper


def _served(workspace: Path | None, config_file: Path | None) -> Any:
    """A ``RemoteReme`` for the server serving this workspace, or None to work in-process."""
    if os.environ.get(LOCAL_ENV, "").strip() in ("1", "true", "yes"):
        return None
    settings = load_settings(config_file)
    root = workspace.expanduser().resolve() if workspace is not None else settings.workspace_path()
    info = discover(root)
    if info is None:
        return None
    # The server may serve this folder under another name than its default workspace.
    client = RemeClient(info.url, token_for(root, info), workspace=info.workspace)
    return RemoteReme(client, info, settings, root)


def emit(result: Any, as_json: bool, text: Callable[[Any], str] | None = None) -> None:
    """Print a result as JSON or through ``text`` (default: JSON anyway)."""
    if as_json or text is None:
        click.echo(json.dumps(plain(result), indent=2, ensure_ascii=False, default=str))
    else:
        output = text(result)
        if output:
            click.echo(output)
