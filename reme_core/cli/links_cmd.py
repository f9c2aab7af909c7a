"""`reme links`: a note's outbound and inbound links, or every unresolved link in the workspace."""

from __future__ import annotations

from collections.abc import Callable

import click

from reme_core.cli.options import emit, workspace_options
from reme_core.errors import RemeError
from reme_core.runtime import Reme
from reme_core.schema import Link
from reme_core.server.discovery import lock_held


def _describe(link: Link) -> str:
    target = link.target or f"{link.raw} ({link.state})"
    return f"{link.source}:{link.line} -> {target}"


@click.command("links")
@click.argument("path", required=False)
@click.option("--unresolved", is_flag=True, help="List every missing or ambiguous link instead.")
@workspace_options(writes=False)
def links_command(
    opener: Callable[[], Reme], as_json: bool, path: str | None, unresolved: bool
) -> None:
    """Show the links of PATH (both ways), or with --unresolved the links that point nowhere."""
    if bool(path) == unresolved:
        raise RemeError("give either a PATH or --unresolved")
    with opener() as reme:
        if not lock_held(reme.root):  # else the server's watcher keeps the links current
            reme.index()
        if unresolved:
            result = {"unresolved": reme.unresolved_links()}
        else:
            rel = reme.files.stat(path).path
            result = {"path": rel, **reme.links(rel)}

    def text(r: dict) -> str:
        if unresolved:
            return "\n".join(_describe(link) for link in r["unresolved"]) or "no unresolved links"
        lines = [f"outbound: {_describe(link)}" for link in r["outbound"]]
        lines += [f"inbound:  {_describe(link)}" for link in r["inbound"]]
        return "\n".join(lines) or f"{r['path']} has no links"

    emit(result, as_json, text)


COMMANDS = [links_command]
