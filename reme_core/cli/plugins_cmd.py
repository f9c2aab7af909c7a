"""`reme plugins` and `reme components`: what is installed and what provides each component."""

from __future__ import annotations

import click

from reme_core.cli.options import emit
from reme_core.plugins import load_plugins


@click.command("plugins")
@click.option("--all", "include_all", is_flag=True, help="Include the defaults shipped with reme.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option(
    "--requirements",
    is_flag=True,
    help="Print requirement lines that install the same set: name==version for index installs, "
    "name @ file://... or name @ git+...@rev for folders and VCS (as pip freeze does).",
)
def plugins_command(include_all: bool, as_json: bool, requirements: bool) -> None:
    """List plugin distributions, their versions and the hooks they implement."""
    infos = load_plugins().describe(include_defaults=include_all or requirements)
    if requirements:
        for info in infos:
            if info.version or info.source.url:
                click.echo(info.requirement)
        return

    def text(_: object) -> str:
        if not infos:
            return "no plugins installed (use --all to include the shipped defaults)"
        return "\n".join(
            f"{i.name} {i.version or ''}\n  hooks: {', '.join(i.hooks)}\n  modules: {', '.join(i.modules)}"
            for i in infos
        )

    emit([i.as_dict() for i in infos], as_json, text)


@click.command("components")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def components_command(as_json: bool) -> None:
    """List every registered implementation per component type, with its provider."""
    plugins = load_plugins()
    table = {
        kind: [{"name": e.name, "provider": e.provider} for e in plugins.registry(kind).entries()]
        for kind in plugins.registries
    }
    table["command"] = [
        {"name": " ".join(filter(None, [c.group, c.command.name])), "provider": c.provider}
        for c in plugins.commands
    ]

    def text(_: object) -> str:
        lines = []
        for kind, entries in table.items():
            names = ", ".join(f"{e['name']} ({e['provider']})" for e in entries) or "-"
            lines.append(f"{kind:14} {names}")
        return "\n".join(lines)

    emit(table, as_json, text)


COMMANDS = [plugins_command, components_command]
