"""The ``reme`` command line. Each concern lives in its own module; plugins add commands too."""

from __future__ import annotations

import json
import sys

import click

from reme_core import __version__
from reme_core.cli import (
    bench_cmd,
    config_cmd,
    context_cmd,
    files_cmd,
    index_cmd,
    links_cmd,
    mcp_cmd,
    memory_cmd,
    plugins_cmd,
    review_cmd,
    run_cmd,
    search_cmd,
    serve_cmd,
)
from reme_core.errors import RemeError
from reme_core.plugins import Plugins, load_plugins


class RemeGroup(click.Group):
    """Turns RemeError into a one-line message (and a JSON object under --json), no traceback."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # Remember the command line this group was invoked with (the outermost group's wins):
        # sys.argv is not it when the CLI runs in-process (tests, plugins calling cli.main()).
        ctx.meta.setdefault("reme.args", list(args))
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except RemeError as exc:
            args = ctx.meta.get("reme.args", sys.argv[1:])
            options = args[: args.index("--")] if "--" in args else args
            if "--json" in options:
                error = {"type": type(exc).__name__, "message": str(exc)}
                details = getattr(exc, "details", None)  # e.g. the files a refused revert lists
                if isinstance(details, dict):
                    error["details"] = details
                click.echo(json.dumps({"error": error}))  # stdout only: one error, one place
            else:
                click.echo(f"error: {exc}", err=True)
            ctx.exit(exc.exit_code)


@click.group(cls=RemeGroup)
@click.version_option(__version__, prog_name="reme")
def cli() -> None:
    """reme: local-first memory for AI agents. Notes are Markdown; everything else is rebuildable."""


for module in (
    plugins_cmd,
    config_cmd,
    files_cmd,
    index_cmd,
    search_cmd,
    links_cmd,
    run_cmd,
    serve_cmd,
    mcp_cmd,
    memory_cmd,
    review_cmd,
    context_cmd,
    bench_cmd,
):
    for command in module.COMMANDS:
        cli.add_command(command)


def attach_plugin_commands(group: click.Group, plugins: Plugins) -> None:
    """Add commands that plugins registered, nesting them under their named group."""
    for registered in plugins.commands:
        parent = group
        if registered.group:
            existing = group.commands.get(registered.group)
            if existing is None:
                existing = RemeGroup(registered.group, help=f"Commands from {registered.provider}.")
                group.add_command(existing)
            if not isinstance(existing, click.Group):
                raise RemeError(
                    f"plugin {registered.provider!r} nests a command under {registered.group!r}, "
                    "which is a command, not a group"
                )
            parent = existing
        if registered.command.name in parent.commands:
            raise RemeError(
                f"plugin {registered.provider!r} registers the command {registered.command.name!r}, "
                "which already exists"
            )
        parent.add_command(registered.command)


def main() -> None:
    try:
        attach_plugin_commands(cli, load_plugins())
    except RemeError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
    cli()
