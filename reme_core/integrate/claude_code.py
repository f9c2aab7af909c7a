"""Claude Code: the ``reme`` MCP server entry, the Stop and SessionEnd hooks, and their token.

User scope writes ``~/.claude.json`` (``mcpServers.reme``, the token in its Authorization header,
as ``claude mcp add --scope user --header`` does) and ``~/.claude/settings.json`` (the hooks, and
``env`` with ``REME_TOKEN``, ``REME_URL`` and ``REME_WORKSPACE`` for the hook); both move into
``$CLAUDE_CONFIG_DIR`` when it is set. Project scope writes the current folder's ``.mcp.json``
(the header reads ``${REME_TOKEN}``: that file is usually committed), the hooks into
``.claude/settings.json``, and the secret only into ``.claude/settings.local.json``, the file
Claude Code keeps out of git, which also approves the project's ``reme`` server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reme_core.errors import RemeError
from reme_core.integrate import Target
from reme_core.integrate.config_files import Op
from reme_core.integrate.folder import INTEGRATIONS_DIR, MISSING_HINT
from reme_core.integrate.host_basics import TOKEN_ENV, detect_host, path_from_env

HOOK_SCRIPT = INTEGRATIONS_DIR / "claude_code" / "hooks" / "reme_stop_hook.py"
"""The hook the plugin ships (``integrations/claude_code/hooks/``), run by absolute path."""
HOOK_EVENTS = ("Stop", "SessionEnd")
HOOK_TIMEOUT_S = 10
SERVER_NAME = "reme"


def config_dir() -> Path:
    """Claude Code's user folder: ``$CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    return path_from_env("CLAUDE_CONFIG_DIR") or Path.home() / ".claude"


def user_state_file() -> Path:
    """``~/.claude.json`` (inside ``$CLAUDE_CONFIG_DIR`` when that is set)."""
    return (path_from_env("CLAUDE_CONFIG_DIR") or Path.home()) / ".claude.json"


def hook_command() -> str:
    if not HOOK_SCRIPT.is_file():
        raise RemeError(
            f"the Claude Code hook is not at {HOOK_SCRIPT}: `reme integrate` needs reme's "
            f"{MISSING_HINT}"
        )
    return f'python3 "{HOOK_SCRIPT}"'


class ClaudeCode:
    """The ``claude-code`` host."""

    name = "claude-code"
    label = "Claude Code"
    scopes = ("user", "project")

    def detect(self) -> dict[str, Any]:
        return detect_host("claude", config_dir())

    def operations(self, target: Target) -> list[Op]:
        command = hook_command()
        hook = {"hooks": [{"type": "command", "command": command, "timeout": HOOK_TIMEOUT_S}]}
        env = {
            "REME_URL": target.url,
            "REME_WORKSPACE": str(target.workspace),
        }
        if target.scope == "user":
            mcp_file, settings, private = user_state_file(), config_dir() / "settings.json", None
            header = f"Bearer {target.secret}"
        else:
            claude = target.project / ".claude"
            mcp_file, settings = target.project / ".mcp.json", claude / "settings.json"
            private = claude / "settings.local.json"
            header = "Bearer ${REME_TOKEN}"
        server: dict[str, Any] = {
            "type": "http",
            "url": target.url.rstrip("/") + "/mcp",
            "headers": {"Authorization": header},
        }
        if target.workspace_name != "default":
            server["headers"]["X-Reme-Workspace"] = target.workspace_name
        ops = [Op(mcp_file, ("mcpServers", SERVER_NAME), server, secret=target.scope == "user")]
        ops += [Op(settings, ("hooks", event), hook, kind="append") for event in HOOK_EVENTS]
        env_file = private or settings
        ops += [Op(env_file, ("env", key), value) for key, value in env.items()]
        ops.append(Op(env_file, ("env", TOKEN_ENV), target.secret, secret=True))
        if private is not None:
            ops.append(Op(private, ("enabledMcpjsonServers",), SERVER_NAME, kind="append"))
        return ops


HOST = ClaudeCode()
