"""Hermes Agent: the ``reme`` memory provider (integrations/hermes), its settings and token.

Hermes finds memory providers only in folders, so this writes ``$HERMES_HOME/plugins/reme/``
(default ``~/.hermes``): ``plugin.yaml`` and an ``__init__.py`` that loads the ``reme_hermes``
package, from Hermes' own environment when ``pip install reme-hermes`` put it there, else from
this reme's ``integrations/hermes`` folder (http mode needs only httpx and pydantic, which Hermes
has). It selects the provider in ``config.yaml`` (``memory.provider: reme``), points it at the
server in ``reme.json`` (mode, url, workspace) and puts the secret in ``$HERMES_HOME/.env``
(mode 0600), which Hermes loads into its environment at start. Another memory provider that was
selected is replaced (the change is printed) and put back by ``--remove``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reme_core.errors import RemeError
from reme_core.integrate import Target
from reme_core.integrate.config_files import Op
from reme_core.integrate.folder import INTEGRATIONS_DIR, MISSING_HINT
from reme_core.integrate.host_basics import (
    detect_host,
    path_from_env,
    require_user_scope,
    token_env_op,
)
from reme_core.integrate.yaml_files import CONTENT

PACKAGE_DIR = INTEGRATIONS_DIR / "hermes"
"""The folder holding the ``reme_hermes`` package in a source checkout or editable install."""
PROVIDER = "reme"
PLUGIN_MANIFEST = {
    "name": PROVIDER,
    "version": "0.1.0",
    "description": "reme: recall before each reply, reme_search/reme_read tools, every session "
    "saved to sessions/ and daily/ notes.",
    "kind": "exclusive",
    "hooks": ["on_session_end"],
}

PLUGIN_INIT = '''"""reme, the memory provider of Hermes Agent (a MemoryProvider), written by `reme integrate
hermes`. The code is the reme_hermes package: Hermes' own copy when one is installed there, else
the one in {source}.
"""

import sys

try:
    import reme_hermes  # noqa: F401
except ImportError:
    sys.path.insert(0, {source!r})

from reme_hermes.hermes_plugin import RemeMemoryProvider, register  # noqa: E402,F401
'''


def hermes_home() -> Path:
    """Hermes' folder: ``$HERMES_HOME``, else ``~/.hermes``."""
    return path_from_env("HERMES_HOME") or Path.home() / ".hermes"


def plugin_init() -> str:
    if not (PACKAGE_DIR / "reme_hermes" / "hermes_plugin" / "__init__.py").is_file():
        raise RemeError(
            f"the Hermes provider is not at {PACKAGE_DIR}: `reme integrate` needs reme's "
            f"{MISSING_HINT}"
        )
    return PLUGIN_INIT.format(source=str(PACKAGE_DIR))


class Hermes:
    """The ``hermes`` host."""

    name = "hermes"
    label = "Hermes"
    scopes = ("user",)

    def detect(self) -> dict[str, Any]:
        return detect_host("hermes", hermes_home())

    def operations(self, target: Target) -> list[Op]:
        require_user_scope(target, "hermes has one home per profile, $HERMES_HOME")
        home = hermes_home()
        plugin = home / "plugins" / PROVIDER
        settings = home / "reme.json"
        return [
            Op(plugin / "__init__.py", (CONTENT,), plugin_init()),
            *(Op(plugin / "plugin.yaml", (k,), v) for k, v in PLUGIN_MANIFEST.items()),
            Op(settings, ("mode",), "http"),
            Op(settings, ("url",), target.url),
            Op(settings, ("workspace",), str(target.workspace)),
            Op(home / "config.yaml", ("memory", "provider"), PROVIDER),
            token_env_op(home / ".env", target),
        ]


HOST = Hermes()
