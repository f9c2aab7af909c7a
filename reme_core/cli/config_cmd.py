"""`reme config show`: the effective configuration, secrets redacted."""

from __future__ import annotations

from pathlib import Path

import click
import yaml

from reme_core.cli.group import RemeGroup
from reme_core.cli.options import emit
from reme_core.plugins import load_plugins
from reme_core.settings import load_settings, redacted, validate_components


@click.group("config", cls=RemeGroup)
def config_group() -> None:
    """Inspect configuration."""


@config_group.command("show")
@click.option(
    "--workspace", "-w", type=click.Path(file_okay=False, path_type=Path), envvar="REME_WORKSPACE"
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    envvar="REME_CONFIG",
)
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of YAML.")
def show(
    workspace: Path | None, config_file: Path | None, overrides: tuple[str, ...], as_json: bool
) -> None:
    """Print the effective config (defaults < file < REME_* env < --set), validated."""
    settings = load_settings(config_file, overrides)
    if workspace is not None:
        settings = settings.model_copy(update={"workspace": Path(workspace).expanduser().resolve()})
    validate_components(settings, load_plugins())
    data = redacted(settings)
    emit(data, as_json, lambda d: yaml.safe_dump(d, sort_keys=False, allow_unicode=True).rstrip())


COMMANDS = [config_group]
