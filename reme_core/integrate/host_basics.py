"""What the host modules share: their folder from an environment variable, ``detect``, the
user-scope check and the ``.env`` line that carries the token.

Each host module (``claude_code``, ``codex``, ``hermes``, ``openclaw``) keeps what is its own (the
files and keys it edits); the pieces that read the same in all of them live here once.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from reme_core.errors import ConfigError
from reme_core.integrate import Target
from reme_core.integrate.config_files import Op

TOKEN_ENV = "REME_TOKEN"
"""The variable the hosts read the write token from (their ``.env``, or Claude Code's ``env``)."""


def path_from_env(name: str) -> Path | None:
    """``$name`` as a path (``~`` expanded), or None when it is unset or blank: the caller
    falls back to its host's default (evaluated only then, so ``Path.home()`` is not needed)."""
    given = os.environ.get(name, "").strip()
    return Path(given).expanduser() if given else None


def detect_host(program: str, folder: Path) -> dict[str, Any]:
    """``Host.detect``: the host is found when ``program`` is on PATH. Its config folder alone
    does not count (``--remove`` may leave one behind that the user filled, and a copied home
    holds folders of programs this machine lacks); ``config_dir_present`` says it apart."""
    found = shutil.which(program)
    return {
        "found": found is not None,
        "program": found,
        "config_dir": str(folder),
        "config_dir_present": folder.is_dir(),
    }


def require_user_scope(target: Target, why: str) -> None:
    """ConfigError ``"<why>: use --scope user"`` unless ``target`` is user scope (a host with
    one configuration per user has no project scope)."""
    if target.scope != "user":
        raise ConfigError(f"{why}: use --scope user")


def token_env_op(env_file: Path, target: Target) -> Op:
    """The op that sets ``REME_TOKEN=<secret>`` in the host's dotenv file."""
    return Op(env_file, (TOKEN_ENV,), target.secret, secret=True)
