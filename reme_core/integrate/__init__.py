"""``reme integrate HOST``: connect an agent host (Claude Code, Codex, later OpenClaw, Hermes) to
a workspace: its MCP entry, its capture hooks and a narrow token, undone by ``--remove``.

Each host is one module here exposing ``HOST`` (see ``Host``); ``HOSTS`` names them, and a
module is imported only when its host is asked for. ``connect.py`` does what every host shares
(the token, backups, the record that ``--remove`` reads); ``config_files.py`` edits JSON files,
``text_files.py`` TOML and dotenv files.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from reme_core.errors import RemeError
from reme_core.integrate.config_files import Op

HOSTS: dict[str, str] = {
    "claude-code": "reme_core.integrate.claude_code",
    "codex": "reme_core.integrate.codex",
    "hermes": "reme_core.integrate.hermes",
    "openclaw": "reme_core.integrate.openclaw",
}
"""host name -> the module whose ``HOST`` connects it."""


@dataclass(frozen=True)
class Target:
    """What a host's configuration must point at."""

    workspace: Path
    workspace_name: str
    """The workspace's name on its server (``X-Reme-Workspace``; ``default`` for the first)."""
    url: str
    secret: str
    scope: str
    project: Path
    """The folder project scope writes into (the current one)."""


class Host(Protocol):
    """One agent host reme can connect."""

    name: str
    label: str
    """How people call it ("Claude Code"): the token's note."""
    scopes: tuple[str, ...]

    def detect(self) -> dict[str, Any]:
        """Whether it is on this machine: ``{"found": bool, ...}`` with what was looked at."""
        ...

    def operations(self, target: Target) -> list[Op]:
        """The edits that connect it to ``target``; ``secret=True`` on the one holding the
        token's secret as is (a rerun reads it back from there)."""
        ...


class UnknownHostError(RemeError):
    """No integration by that name."""

    exit_code = 2


def host(name: str) -> Host:
    """The host named ``name``; UnknownHostError lists the known ones."""
    module = HOSTS.get(name)
    if module is None:
        raise UnknownHostError(f"unknown host {name!r}; reme knows: {', '.join(sorted(HOSTS))}")
    found: Host = importlib.import_module(module).HOST
    return found


__all__ = ["HOSTS", "Host", "Target", "UnknownHostError", "host"]
