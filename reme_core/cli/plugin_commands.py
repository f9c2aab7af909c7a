"""Where the commands plugins register go: at the top of ``reme`` or nested under a group.

``RemeGroup`` (``group``) builds on this module; attaching the commands to a hand-built group
is ``group.attach_plugin_commands``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import click

from reme_core.errors import RemeError

if TYPE_CHECKING:
    from reme_core.cli.plugin_listing import Listing
    from reme_core.plugins import Plugins

Tree = dict[str, dict[str, click.Command]]
"""Parent group ("" for the top) -> command name -> the command a plugin registered there."""

HELP_LIMIT = 10_000
"""Long enough for any first sentence: a help screen shortens it to fit its own width."""


def plugin_tree(
    plugins: Plugins,
    core: Callable[[str], click.Command | None],
    make_group: type[click.Group],
) -> Tree:
    """The plugins' commands by parent. ``core(name)`` is the top-level command a plugin's
    command may nest under or collide with. A group no core command is named after is made
    here (a ``make_group``; ``RemeGroup`` passes itself), holding its plugins' commands; a name
    taken twice, or nesting under a plain command, is an error naming the plugin."""
    tree: Tree = {"": {}}
    made: dict[str, click.Group] = {}
    for registered in plugins.commands:
        name = registered.command.name or ""
        if registered.group is None:
            parent, taken = "", core(name) is not None
        else:
            parent = registered.group
            group = core(parent) or tree[""].get(parent)
            if group is None:
                group = made[parent] = make_group(
                    parent, help=f"Commands from {registered.provider}."
                )
                tree[""][parent] = group
            if not isinstance(group, click.Group):
                raise RemeError(
                    f"plugin {registered.provider!r} nests a command under {parent!r}, "
                    "which is a command, not a group"
                )
            taken = name in group.commands
        siblings = tree.setdefault(parent, {})
        if taken or name in siblings:
            raise RemeError(
                f"plugin {registered.provider!r} registers the command {name!r}, "
                "which already exists"
            )
        siblings[name] = registered.command
        if parent in made:
            made[parent].add_command(registered.command, name)
    return tree


def listing_of(tree: Tree) -> Listing:
    """Each command's first help sentence, as a help screen lists it (hidden ones left out)."""
    return {
        parent: {
            name: command.get_short_help_str(HELP_LIMIT)
            for name, command in commands.items()
            if not command.hidden
        }
        for parent, commands in tree.items()
    }


def packages_of(plugins: Plugins) -> Iterator[str]:
    """The top-level packages the plugins and their commands are defined in."""
    for plugin in plugins.pm.get_plugins():
        yield _top(getattr(plugin, "__name__", None) or type(plugin).__module__)
    for registered in plugins.commands:
        callback = registered.command.callback
        yield _top(getattr(callback, "__module__", None) or type(registered.command).__module__)


def _top(module: str) -> str:
    return module.partition(".")[0]
