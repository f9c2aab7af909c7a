"""OpenClaw: the ``reme`` plugin (integrations/openclaw) loaded from its folder, and its token.

Writes OpenClaw's config file (``$OPENCLAW_CONFIG_PATH``, else ``openclaw.json`` in the state
dir: ``$OPENCLAW_STATE_DIR``, else ``~/.openclaw``): the plugin folder added to
``plugins.load.paths`` and ``plugins.entries.reme`` (enabled, conversation access for its recall
and capture hooks, the server's url, the workspace on a server that serves several). The write
token goes into the state dir's ``.env`` (0600) as ``REME_TOKEN``, which OpenClaw loads into its
environment at start, so the secret is never in openclaw.json. A config written in JSON5 with
comments is refused (nothing changed): `reme integrate` edits JSON only.

The plugin must be built (``npm ci && npm run build`` in its folder); ``$REME_OPENCLAW_PLUGIN``
names another built copy of it.
"""

from __future__ import annotations

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

PLUGIN_DIR = INTEGRATIONS_DIR / "openclaw"
"""The plugin's folder in a source checkout or an editable install."""
PLUGIN_ID = "reme"


def state_dir() -> Path:
    """OpenClaw's state folder: ``$OPENCLAW_STATE_DIR``, else ``~/.openclaw``."""
    return path_from_env("OPENCLAW_STATE_DIR") or Path.home() / ".openclaw"


def config_file() -> Path:
    """OpenClaw's config: ``$OPENCLAW_CONFIG_PATH``, else ``<state dir>/openclaw.json``."""
    return path_from_env("OPENCLAW_CONFIG_PATH") or state_dir() / "openclaw.json"


def plugin_dir() -> Path:
    """The built plugin folder OpenClaw should load; RemeError when it is not built."""
    given = path_from_env("REME_OPENCLAW_PLUGIN")
    folder = given.resolve() if given else PLUGIN_DIR
    if not (folder / "openclaw.plugin.json").is_file():
        raise RemeError(
            f"the OpenClaw plugin is not at {folder}: `reme integrate openclaw` needs reme's "
            f"{MISSING_HINT} (or REME_OPENCLAW_PLUGIN naming the plugin's folder)"
        )
    if not (folder / "dist" / "index.js").is_file():
        raise RemeError(
            f"the OpenClaw plugin at {folder} is not built: run `npm ci && npm run build` there "
            "(Node >= 24.16), then this command again"
        )
    return folder


class OpenClaw:
    """The ``openclaw`` host."""

    name = "openclaw"
    label = "OpenClaw"
    scopes = ("user",)

    def detect(self) -> dict[str, Any]:
        return detect_host("openclaw", state_dir())

    def operations(self, target: Target) -> list[Op]:
        require_user_scope(target, "openclaw has one config per state dir")
        config: dict[str, Any] = {"url": target.url, "tokenEnv": TOKEN_ENV}
        if target.workspace_name != "default":
            config["workspace"] = target.workspace_name
        entry = {
            "enabled": True,
            # OpenClaw runs a non-bundled plugin's conversation hooks only when told to.
            "hooks": {"allowConversationAccess": True},
            "config": config,
        }
        settings = config_file()
        return [
            Op(settings, ("plugins", "load", "paths"), str(plugin_dir()), kind="append"),
            Op(settings, ("plugins", "entries", PLUGIN_ID), entry),
            token_env_op(state_dir() / ".env", target),
        ]


HOST = OpenClaw()
