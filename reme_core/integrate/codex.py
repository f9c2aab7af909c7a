"""Codex: the ``reme`` MCP server entry, the notify program that captures each turn, and the token.

Writes ``$CODEX_HOME/config.toml`` (default ``~/.codex``): ``[mcp_servers.reme]`` (streamable
HTTP, the bearer token read from ``$REME_TOKEN`` through ``bearer_token_env_var``, so no secret
sits in config.toml) and ``notify``, the program Codex runs after every turn
(``integrations/codex/reme_codex_notify.py`` with the server's url and the workspace). The
secret goes into ``$CODEX_HOME/.env`` (mode 0600), which Codex loads into its environment at
start, so both the MCP connection and the notify program get it. Codex runs one ``notify``
program: one that was set before is passed on after ``--then`` (reme's program starts it too)
and put back as it was by ``--remove``.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from reme_core.errors import RemeError
from reme_core.integrate import Target
from reme_core.integrate.config_files import Op
from reme_core.integrate.folder import INTEGRATIONS_DIR, MISSING_HINT
from reme_core.integrate.host_basics import (
    TOKEN_ENV,
    detect_host,
    path_from_env,
    require_user_scope,
    token_env_op,
)

NOTIFY_SCRIPT = INTEGRATIONS_DIR / "codex" / "reme_codex_notify.py"
"""The notify program ``integrations/codex/`` ships, run by absolute path."""
SERVER_NAME = "reme"


def codex_home() -> Path:
    """Codex's folder: ``$CODEX_HOME``, else ``~/.codex``."""
    return path_from_env("CODEX_HOME") or Path.home() / ".codex"


def previous_notify(config: Path) -> list[str]:
    """The notify program ``config`` runs that is not reme's (reme's own passes it on after
    ``--then``): reme's program starts it too, so a desktop notifier keeps working."""
    try:
        value = tomllib.loads(config.read_text(encoding="utf-8")).get("notify")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return []  # absent, or malformed: planning the edit reports that
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        return []
    if not any(Path(v).name == NOTIFY_SCRIPT.name for v in value):
        return value
    return value[value.index("--then") + 1 :] if "--then" in value else []


def notify_command(target: Target, config: Path) -> list[str]:
    if not NOTIFY_SCRIPT.is_file():
        raise RemeError(
            f"the Codex notify program is not at {NOTIFY_SCRIPT}: `reme integrate` needs reme's "
            f"{MISSING_HINT}"
        )
    command = ["python3", str(NOTIFY_SCRIPT), "--url", target.url]
    command += ["--workspace", str(target.workspace)]
    previous = previous_notify(config)
    return [*command, "--then", *previous] if previous else command


class Codex:
    """The ``codex`` host."""

    name = "codex"
    label = "Codex"
    scopes = ("user",)

    def detect(self) -> dict[str, Any]:
        return detect_host("codex", codex_home())

    def operations(self, target: Target) -> list[Op]:
        require_user_scope(target, "codex has one configuration, $CODEX_HOME/config.toml")
        home = codex_home()
        server: dict[str, Any] = {
            "url": target.url.rstrip("/") + "/mcp",
            "bearer_token_env_var": TOKEN_ENV,
        }
        if target.workspace_name != "default":
            server["http_headers"] = {"X-Reme-Workspace": target.workspace_name}
        config = home / "config.toml"
        return [
            Op(config, ("mcp_servers", SERVER_NAME), server),
            Op(config, ("notify",), notify_command(target, config)),
            token_env_op(home / ".env", target),
        ]


HOST = Codex()
