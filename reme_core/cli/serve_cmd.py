"""`reme serve` and `reme token create|list|revoke`."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from reme_core.cli.group import RemeGroup
from reme_core.cli.options import config_file_option, emit, locate_workspace, overrides_option
from reme_core.plugins import load_plugins
from reme_core.runtime import STATE_DIR
from reme_core.server.auth import ALL_WORKSPACES, TOKEN_ENV, TokenInfo, TokenStore
from reme_core.server.workspaces import DEFAULT
from reme_core.settings import Settings, load_settings

LOG_LEVELS = ["critical", "error", "warning", "info", "debug"]


def _config_options(
    folder_help: str, *, may_be_new: bool = False, old_name: bool = False
) -> Callable[..., Any]:
    """-w/--workspace (and the deprecated -r/--root), --config and --set; passes ``settings``
    whose ``workspace`` is the folder found (``locate_workspace``).

    ``may_be_new``: a folder named with -w, REME_WORKSPACE or config need not be a workspace yet
    (``reme serve -w DIR`` serves a folder of notes as is: the server creates ``.reme/``). Without
    one, the workspace is found from the current folder up.
    ``old_name``: also accept the hidden, deprecated -r/--root (``reme token``'s old flag).
    """

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        @click.option(
            "--workspace",
            "-w",
            "folder",
            type=click.Path(file_okay=False, path_type=Path),
            envvar="REME_WORKSPACE",
            help=folder_help,
        )
        @config_file_option
        @overrides_option
        @functools.wraps(func)
        def wrapper(
            folder: Path | None,
            config_file: Path | None,
            overrides: tuple[str, ...],
            old_folder: Path | None = None,
            **kw: Any,
        ) -> Any:
            if old_folder is not None:
                if folder is not None:
                    raise click.UsageError(
                        "give -w/--workspace (-r/--root is its old name), not both"
                    )
                folder = old_folder
            settings = load_settings(config_file, overrides)
            named = folder is not None or settings.workspace is not None
            root = locate_workspace(folder, settings, may_be_new=may_be_new and named)
            settings = settings.model_copy(update={"workspace": root})
            return func(settings=settings, **kw)

        if old_name:
            return click.option(
                "--root",
                "-r",
                "old_folder",
                type=click.Path(file_okay=False, path_type=Path),
                hidden=True,
            )(wrapper)
        return wrapper

    return decorate


@click.command("serve")
@click.option("--host", help="Address to listen on (default: server.host, 127.0.0.1).")
@click.option(
    "--port", type=click.IntRange(0, 65535), help="Port (default: server.port, 2333; 0: any)."
)
@click.option(
    "--log-level",
    type=click.Choice(LOG_LEVELS),
    default="info",
    show_default=True,
    help="Server log verbosity.",
)
@_config_options(
    "Workspace folder to serve as 'default' (env REME_WORKSPACE, else config; a folder named so "
    "becomes a workspace if it is not one yet), else the nearest folder holding .reme/ from here up.",
    may_be_new=True,
)
def serve_command(settings: Settings, host: str | None, port: int | None, log_level: str) -> None:
    """Serve the HTTP API, MCP (at /mcp), the watcher and the scheduler on one port."""
    from reme_core.server.serve import Server  # uvicorn and FastAPI only when serving

    update = {k: v for k, v in (("host", host), ("port", port)) if v is not None}
    if update:
        settings = settings.model_copy(update={"server": settings.server.model_copy(update=update)})
    root = settings.workspace_path()
    fresh = not (root / STATE_DIR).is_dir()
    server = Server(settings, plugins=load_plugins(), log_level=log_level, echo=_echo_err)
    if fresh:  # the configuration is sound: from here on the folder is a workspace
        _echo_err(f"{root} is not a reme workspace yet: serving it makes it one ({STATE_DIR}/)")
    server.run()


def _echo_err(message: str) -> None:
    click.echo(message, err=True)


@click.group("token", cls=RemeGroup)
def token_group() -> None:
    """Bearer tokens for `reme serve`: each has a profile (read, write, admin) and workspaces."""


_TOKEN_FOLDER = (
    "The served workspace folder whose .reme/ keeps the tokens (env REME_WORKSPACE, else "
    "config, else the nearest folder holding .reme/ from here up)."
)


def _store(settings: Settings) -> TokenStore:
    return TokenStore(settings.workspace_path() / STATE_DIR)


@token_group.command("create")
@click.option(
    "--profile",
    type=click.Choice(["read", "write", "admin"]),
    required=True,
    help="read: search, read, list, stat, traverse, status; write: also write, edit, "
    "frontmatter, auto_memory*, auto_resource; admin: everything (move, delete, reindex, dream).",
)
@click.option(
    "--workspace-name",
    "workspaces",
    multiple=True,
    metavar="NAME",
    help="A served workspace name the token may use (repeat for more; default: "
    f"{DEFAULT!r}; the names are the server's: {DEFAULT!r} and server.workspaces).",
)
@click.option("--all-workspaces", is_flag=True, help="Every workspace, including ones added later.")
@click.option("--note", default="", help="What the token is for (shown by `reme token list`).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@_config_options(_TOKEN_FOLDER, old_name=True)
def token_create(
    settings: Settings,
    profile: str,
    workspaces: tuple[str, ...],
    all_workspaces: bool,
    note: str,
    as_json: bool,
) -> None:
    """Create a token and print its secret (shown once: only its hash is kept)."""
    if all_workspaces and workspaces:
        raise click.UsageError("give --workspace-name NAME or --all-workspaces, not both")
    names = [ALL_WORKSPACES] if all_workspaces else list(workspaces or [DEFAULT])
    known = [DEFAULT, *settings.server.workspaces]
    token_id, secret = _store(settings).create(profile, names, note, known=known)
    emit(
        {"id": token_id, "secret": secret, "profile": profile, "workspaces": sorted(set(names))},
        as_json,
        lambda r: (
            f"created {r['id']} (profile {r['profile']}, workspaces {', '.join(r['workspaces'])}).\n"
            "Secret, shown only now:\n"
            f"{r['secret']}\n"
            f'Use it as "Authorization: Bearer <secret>", or export {TOKEN_ENV}=<secret>.'
        ),
    )


@token_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@_config_options(_TOKEN_FOLDER, old_name=True)
def token_list(settings: Settings, as_json: bool) -> None:
    """Tokens (id, profile, workspaces, created, note); never their secrets."""
    emit(_store(settings).list_tokens(), as_json, _token_lines)


def _token_lines(tokens: list[TokenInfo]) -> str:
    if not tokens:
        return "no tokens (the server creates one on its first start)"
    return "\n".join(
        f"{t.id}  {t.profile:<5}  {','.join(t.workspaces):<20}  {t.created}  {t.note}".rstrip()
        for t in tokens
    )


@token_group.command("revoke")
@click.argument("token_id")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@_config_options(_TOKEN_FOLDER, old_name=True)
def token_revoke(settings: Settings, token_id: str, as_json: bool) -> None:
    """Revoke a token; a running server refuses it from its next request."""
    _store(settings).revoke(token_id)
    emit({"revoked": token_id}, as_json, lambda r: f"revoked {r['revoked']}")


COMMANDS = [serve_command, token_group]
