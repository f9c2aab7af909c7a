"""Options every workspace command shares, and helpers to open the workspace and print results."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from pydantic import BaseModel

from reme_core.runtime import Reme


def workspace_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add --workspace, --config, --set and --json, and pass an opener for the workspace."""

    @click.option(
        "--workspace",
        "-w",
        type=click.Path(file_okay=False, path_type=Path),
        envvar="REME_WORKSPACE",
        help="Workspace folder (env REME_WORKSPACE, else config `workspace`, else the current folder).",
    )
    @click.option(
        "--config",
        "config_file",
        type=click.Path(dir_okay=False, exists=True, path_type=Path),
        envvar="REME_CONFIG",
        help="YAML config file (env REME_CONFIG).",
    )
    @click.option(
        "--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a config key."
    )
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
            return Reme.open(workspace, config_file=config_file, overrides=overrides)

        return func(opener=opener, as_json=as_json, **kwargs)

    return wrapper


def emit(result: Any, as_json: bool, text: Callable[[Any], str] | None = None) -> None:
    """Print a result as JSON or through ``text`` (default: JSON anyway)."""
    if as_json or text is None:
        click.echo(json.dumps(_plain(result), indent=2, ensure_ascii=False, default=str))
    else:
        output = text(result)
        if output:
            click.echo(output)


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value
