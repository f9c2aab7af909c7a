"""`reme serve` and `reme token create|list|revoke`."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from reme_core.cli.options import config_file_option, emit, overrides_option
from reme_core.errors import WorkspaceError
from reme_core.plugins import load_plugins
from reme_core.runtime import STATE_DIR
from reme_core.server.auth import ALL_WORKSPACES, TOKEN_ENV, TokenInfo, TokenStore
from reme_core.server.workspaces import DEFAULT
from reme_core.settings import Settings, load_settings

LOG_LEVELS = ["critical", "error", "warning", "info", "debug"]


def _config_options(folder_flag: str, folder_help: str) -> Callable[..., Any]:
    """The folder option (named ``folder_flag``), --config and --set; passes ``settings``."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        @click.option(
            *folder_flag.split("/"),
            "folder",
            type=click.Path(file_okay=False, path_type=Path),
            envvar="REME_WORKSPACE",
            help=folder_help,
        )
        @config_file_option
        @overrides_option
        @functools.wraps(func)
        def wrapper(
            folder: Path | None, config_file: Path | None, overrides: tuple[str, ...], **kw: Any
        ) -> Any:
            settings = load_settings(config_file, overrides)
            if folder is not None:
                settings = settings.model_copy(update={"workspace": folder.expanduser().resolve()})
            return func(settings=settings, **kw)

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
    "--workspace/-w",
    "Workspace folder to serve as 'default' (env REME_WORKSPACE, else config, else here).",
)
def serve_command(settings: Settings, host: str | None, port: int | None, log_level: str) -> None:
    """Serve the HTTP API, MCP (at /mcp), the watcher and the scheduler on one port."""
    from reme_core.server.serve import Server  # uvicorn and FastAPI only when serving

    update = {k: v for k, v in (("host", host), ("port", port)) if v is not None}
    if update:
        settings = settings.model_copy(update={"server": settings.server.model_copy(update=update)})
    Server(settings, plugins=load_plugins(), log_level=log_level, echo=_echo_err).run()


def _echo_err(message: str) -> None:
    click.echo(message, err=True)


@click.group("token")
def token_group() -> None:
    """Bearer tokens for `reme serve`: each has a profile (read, write, admin) and workspaces."""


_TOKEN_FOLDER = (
    "--root/-r",
    "The served workspace folder whose .reme/ keeps the tokens "
    "(env REME_WORKSPACE, else config, else here).",
)


def _store(settings: Settings) -> TokenStore:
    root = settings.workspace_path()
    if not root.is_dir():
        raise WorkspaceError(f"workspace {root} does not exist; create it with `reme init {root}`")
    return TokenStore(root / STATE_DIR)


@token_group.command("create")
@click.option(
    "--profile",
    type=click.Choice(["read", "write", "admin"]),
    required=True,
    help="read: search, read, list, stat, traverse, status; write: also write, edit, "
    "frontmatter, auto_memory*, auto_resource; admin: everything (move, delete, reindex, dream).",
)
@click.option(
    "--workspace",
    "workspaces",
    multiple=True,
    metavar="NAME",
    help=f"A workspace name the token may use (repeat for more; default: {DEFAULT!r}).",
)
@click.option("--all-workspaces", is_flag=True, help="Every workspace, including ones added later.")
@click.option("--note", default="", help="What the token is for (shown by `reme token list`).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@_config_options(*_TOKEN_FOLDER)
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
        raise click.UsageError("give --workspace NAME or --all-workspaces, not both")
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
@_config_options(*_TOKEN_FOLDER)
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
@_config_options(*_TOKEN_FOLDER)
def token_revoke(settings: Settings, token_id: str, as_json: bool) -> None:
    """Revoke a token; a running server refuses it from its next request."""
    _store(settings).revoke(token_id)
    emit({"revoked": token_id}, as_json, lambda r: f"revoked {r['revoked']}")


COMMANDS = [serve_command, token_group]
