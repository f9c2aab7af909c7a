"""Options every workspace command shares, and helpers to open the workspace and print results."""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from reme_core.errors import WorkspaceError

# Only opening a workspace needs the runtime, the HTTP client, settings and plugins: they are
# imported there, so a command's --help (and modules importing the options) stay light.
if TYPE_CHECKING:
    from reme_core.server.discovery import Discovery
    from reme_core.settings import Settings

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
    help="Workspace folder (env REME_WORKSPACE, else config `workspace`, else the nearest folder "
    "holding .reme/ from here up).",
)


class NotAWorkspaceError(WorkspaceError):
    """The command was not pointed at a workspace (a folder holding ``.reme/``)."""


LOCAL_ENV = "REME_LOCAL"
"""Set to 1 to make commands work in-process even when a server is running (read-only ones only:
a command that writes is refused while a server owns the workspace)."""


def find_workspace(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` that holds ``.reme/`` (as git finds a repo)."""
    from reme_core.runtime import STATE_DIR

    for folder in (start, *start.parents):
        if (folder / STATE_DIR).is_dir():
            return folder
    return None


def locate_workspace(
    workspace: Path | None, settings: Settings, *, may_be_new: bool = False
) -> Path:
    """The workspace a command works on; creates nothing.

    ``-w``/``REME_WORKSPACE``, else config ``workspace``, must name a workspace (a folder holding
    ``.reme/``; with ``may_be_new`` any existing folder will do: ``reme serve -w DIR`` makes it
    one). Without either, the nearest folder holding ``.reme/`` from the current
    one up. Anything else is refused, naming ``reme init`` and ``-w``: a command run in the wrong
    folder must not make it a workspace and index everything below it.
    """
    from reme_core.runtime import STATE_DIR

    if workspace is not None:
        root = workspace.expanduser().resolve()
    elif settings.workspace is not None:
        root = settings.workspace_path()
    else:
        here = Path.cwd().resolve()
        found = find_workspace(here)
        if found is None:
            raise NotAWorkspaceError(
                f"not in a reme workspace: neither {here} nor a folder above it holds {STATE_DIR}/; "
                "make one with `reme init [DIR]`, or name one with -w DIR (or REME_WORKSPACE)"
            )
        return found
    if not root.is_dir():
        raise NotAWorkspaceError(
            f"workspace {root} does not exist; create it with `reme init {root}`"
        )
    if not may_be_new and not (root / STATE_DIR).is_dir():
        raise NotAWorkspaceError(
            f"{root} is not a reme workspace (it has no {STATE_DIR}/ folder); "
            f"make it one with `reme init {root}`, or name another with -w DIR"
        )
    return root


def workspace_options(
    func: Callable[..., Any] | None = None,
    *,
    remote: bool = False,
    writes: bool = True,
    busy: str = "",
) -> Callable[..., Any]:
    """Add --workspace, --config, --set and --json, and pass an opener for the workspace.

    ``opener()`` finds the workspace (``locate_workspace``) and opens it. While a server holds
    the workspace it is the one writer: with ``remote=True`` the opener returns a ``RemoteReme``
    (writes go through the server and are indexed there) unless ``--set`` asks for a different
    configuration or ``REME_LOCAL=1``; otherwise a command that ``writes`` (``opener(writes=...)``
    decides per call) is refused, naming the server (``busy`` says what to do instead; ``{url}``
    in it is the server's address), and a read-only one runs in-process.
    """
    if func is None:
        return functools.partial(workspace_options, remote=remote, writes=writes, busy=busy)

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
        def opener(*, writes: bool = writes) -> Any:
            return open_workspace(
                workspace, config_file, overrides, remote=remote, writes=writes, busy=busy
            )

        return func(opener=opener, as_json=as_json, **kwargs)

    return wrapper


def open_workspace(
    workspace: Path | None,
    config_file: Path | None,
    overrides: tuple[str, ...],
    *,
    remote: bool = False,
    writes: bool = True,
    busy: str = "",
) -> Any:
    """A ``Reme`` (in-process) or a ``RemoteReme`` (through the server that owns the workspace);
    see ``workspace_options``."""
    from reme_core.client import RemeClient, RemoteReme, token_for
    from reme_core.plugins import load_plugins
    from reme_core.runtime import Reme
    from reme_core.server.discovery import ServerRunningError, lock_held, read_discovery
    from reme_core.settings import load_settings

    settings = load_settings(config_file, overrides)
    root = locate_workspace(workspace, settings)
    if lock_held(root):
        info = read_discovery(root)
        local = _local_asked()
        if remote and not overrides and not local and info is not None:
            # The server may serve this folder under another name than its default workspace.
            client = RemeClient(info.url, token_for(root, info), workspace=info.workspace)
            return RemoteReme(client, info, settings, root)
        if writes:
            raise ServerRunningError(_second_writer(root, info, remote, overrides, local, busy))
    settings = settings.model_copy(update={"workspace": root})
    return Reme(settings, load_plugins())


def _local_asked() -> bool:
    return os.environ.get(LOCAL_ENV, "").strip().lower() in ("1", "true", "yes")


def _second_writer(
    root: Path,
    info: Discovery | None,
    remote: bool,
    overrides: tuple[str, ...],
    local: bool,
    busy: str,
) -> str:
    from reme_core.runtime import STATE_DIR

    if info is None:
        return (
            f"a reme server is starting for {root} (it holds {STATE_DIR}/server.lock but has not "
            f"written {STATE_DIR}/server.json yet); retry in a moment"
        )
    ctx = click.get_current_context(silent=True)
    command = " ".join(["reme", *(ctx.command_path.split()[1:] if ctx else ["..."])])
    where = f"{root} is served by the reme server at {info.url} (pid {info.pid})"
    if remote:
        asked = " and ".join(
            what for what, given in ((f"{LOCAL_ENV}=1", local), ("--set", bool(overrides))) if given
        )
        advice = f"without {asked} it goes through that server; or stop the server first"
    else:
        advice = (busy or "stop the server first, or use its HTTP API or MCP").format(url=info.url)
    return f"{where}; `{command}` would be a second writer beside it: {advice}"


def emit(result: Any, as_json: bool, text: Callable[[Any], str] | None = None) -> None:
    """Print a result as JSON or through ``text`` (default: JSON anyway)."""
    if as_json or text is None:
        from reme_core.service.operations import plain

        click.echo(json.dumps(plain(result), indent=2, ensure_ascii=False, default=str))
    else:
        output = text(result)
        if output:
            click.echo(output)
