"""The ``reme`` command line. Each concern lives in its own module, imported when one of its
commands is asked for (``catalog.CORE_COMMANDS``); plugins add commands too."""

from __future__ import annotations

import click

from reme_core import __version__
from reme_core.cli.catalog import CORE_COMMANDS
from reme_core.cli.group import RemeGroup, attach_plugin_commands


@click.group(cls=RemeGroup, lazy=CORE_COMMANDS, plugin_commands=True)
@click.version_option(__version__, prog_name="reme")
def cli() -> None:
    """reme: local-first memory for AI agents. Notes are Markdown; everything else is rebuildable."""


def main() -> None:
    cli()


__all__ = ["RemeGroup", "attach_plugin_commands", "cli", "main"]
