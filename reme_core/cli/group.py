"""``RemeGroup``: one-line errors, and commands found only when they are asked for."""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NoReturn

import click

from reme_core.cli.plugin_commands import Tree, listing_of, packages_of, plugin_tree
from reme_core.cli.plugin_listing import Listing, read_listing, write_listing
from reme_core.errors import RemeError

if TYPE_CHECKING:
    from reme_core.plugins import Plugins


class RemeGroup(click.Group):
    """Turns RemeError into a one-line message (and a JSON object under --json), no traceback.

    ``lazy`` maps a command name to the module defining it and its help line: the module is
    imported when the command runs or shows its own help, and a help screen prints the line.
    With ``plugin_commands`` (``reme`` itself) the commands plugins register are found too, at
    the top or under any of its groups: only a name that is no core command loads the plugins,
    and help screens list them from ``plugin_listing`` (loading the plugins when it is stale).
    """

    def __init__(
        self,
        name: str | None = None,
        commands: Any = None,
        *,
        lazy: Mapping[str, tuple[str, str]] | None = None,
        plugin_commands: bool = False,
        **attrs: Any,
    ) -> None:
        super().__init__(name, commands, **attrs)
        self.lazy = dict(lazy or {})
        self.plugin_commands = plugin_commands
        self._tree: tuple[Plugins, Tree] | None = None

    # -- errors ------------------------------------------------------------------------------

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # Remember the command line this group was invoked with (the outermost group's wins):
        # sys.argv is not it when the CLI runs in-process (tests, plugins calling cli.main()).
        ctx.meta.setdefault("reme.args", list(args))
        try:
            return super().parse_args(ctx, args)
        except RemeError as exc:  # --help lists plugin commands: loading them may fail
            self._report(ctx, exc)

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except RemeError as exc:
            self._report(ctx, exc)

    @staticmethod
    def _report(ctx: click.Context, exc: RemeError) -> NoReturn:
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

    # -- finding commands --------------------------------------------------------------------

    def core_command(self, name: str) -> click.Command | None:
        """This group's own command ``name`` (importing its module if it is a lazy one)."""
        command = self.commands.get(name)
        if command is None and name in self.lazy:
            module = importlib.import_module(self.lazy[name][0])
            command = next(c for c in module.COMMANDS if c.name == name)
            self.add_command(command)  # found directly from now on
        return command

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = self.core_command(cmd_name)
        root = self._plugin_root(ctx)
        if command is None and root is not None:
            command = root.plugin_tree().get(self._parent_key(ctx, root), {}).get(cmd_name)
        return command

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(self._listed(ctx))

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """As click lists commands, from help lines where a command is not imported yet."""
        rows: list[tuple[str, click.Command]] = []
        for name, command in sorted(self._listed(ctx).items()):
            if not command.hidden:
                rows.append((name, command))
        if rows:
            limit = formatter.width - 6 - max(len(name) for name, _ in rows)
            with formatter.section("Commands"):
                formatter.write_dl([(n, c.get_short_help_str(limit)) for n, c in rows])

    def _listed(self, ctx: click.Context) -> dict[str, click.Command]:
        """Every command name, each with its command, or a stand-in carrying its help line."""
        listed: dict[str, click.Command] = {}
        root = self._plugin_root(ctx)
        if root is not None:
            for name, line in root.plugin_listing().get(self._parent_key(ctx, root), {}).items():
                listed[name] = click.Command(name, help=line)
        listed.update(
            (name, click.Command(name, help=line)) for name, (_, line) in self.lazy.items()
        )
        listed.update(self.commands)
        return listed

    # -- plugin commands ---------------------------------------------------------------------

    def _plugin_root(self, ctx: click.Context) -> RemeGroup | None:
        """The group whose plugins' commands this one holds: itself, or the ``reme`` it is a
        direct command of (a plugin nests a command under a top-level group)."""
        if self.plugin_commands:
            return self
        parent = ctx.parent
        if parent is not None and parent.parent is None:
            top = parent.command
            if isinstance(top, RemeGroup) and top.plugin_commands:
                return top
        return None

    def _parent_key(self, ctx: click.Context, root: RemeGroup) -> str:
        return "" if root is self else ctx.info_name or self.name or ""

    def plugin_tree(self) -> Tree:
        """The plugins' commands by parent group, loading the plugins if no one has."""
        from reme_core.plugins import load_plugins

        return self._tree_of(load_plugins())

    def plugin_listing(self) -> Listing:
        """The plugins' commands by parent, as help lines. Plugins not loaded yet stay so while
        the remembered listing holds (``plugin_listing``); otherwise they are asked."""
        plugins = _loaded_plugins()
        if plugins is None:
            remembered = read_listing()
            if remembered is not None:
                return remembered
            from reme_core.plugins import load_plugins

            plugins = load_plugins()
            listing = listing_of(self._tree_of(plugins))
            write_listing(listing, packages_of(plugins))
            return listing
        return listing_of(self._tree_of(plugins))

    def _tree_of(self, plugins: Plugins) -> Tree:
        if self._tree is None or self._tree[0] is not plugins:
            self._tree = (plugins, plugin_tree(plugins, self.core_command, RemeGroup))
        return self._tree[1]


def attach_plugin_commands(group: click.Group, plugins: Plugins) -> None:
    """Add the commands plugins registered to ``group`` (tests and hand-built command trees;
    ``reme`` itself looks them up lazily, see ``RemeGroup``)."""

    def core(name: str) -> click.Command | None:
        if isinstance(group, RemeGroup):
            return group.core_command(name)
        return group.commands.get(name)

    tree = plugin_tree(plugins, core, RemeGroup)
    for name, command in tree[""].items():
        group.add_command(command, name)
    for parent, commands in tree.items():
        target = core(parent) if parent else None
        if isinstance(target, click.Group):
            for name, command in commands.items():
                target.add_command(command, name)


def _loaded_plugins() -> Plugins | None:
    # Not imported means not loaded; importing reme_core.plugins to ask would cost numpy.
    module = sys.modules.get("reme_core.plugins")
    return module.loaded_plugins() if module is not None else None
