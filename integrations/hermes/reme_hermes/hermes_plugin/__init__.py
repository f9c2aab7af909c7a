"""reme, the memory provider of Hermes Agent (a MemoryProvider): the plugin folder Hermes finds.

Hermes looks for memory providers only in folders: its own ``plugins/memory/<name>/`` and
``$HERMES_HOME/plugins/<name>/``. ``reme-hermes install`` copies this file and ``plugin.yaml``
to ``$HERMES_HOME/plugins/reme/``; the code is the ``reme-hermes`` package in Hermes' Python
environment, so upgrading that package upgrades the provider.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
from pathlib import Path

try:
    from reme_hermes.provider import RemeMemoryProvider
except ImportError as exc:  # Hermes would only log this at debug level: say it where users look
    RemeMemoryProvider = None  # type: ignore[assignment,misc]
    _home = Path(os.environ.get("HERMES_HOME") or Path.home() / ".hermes")
    try:
        (_home / "logs").mkdir(parents=True, exist_ok=True)
        with (_home / "logs" / "reme.log").open("a", encoding="utf-8") as _out:
            _stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            _out.write(
                f"{_stamp} WARNING reme memory is off: {exc}; install reme-hermes into "
                f"{sys.executable} (pip install reme-hermes)\n"
            )
    except OSError:
        pass


def register(ctx) -> None:
    """Hand Hermes the provider (``ctx.register_memory_provider``)."""
    if RemeMemoryProvider is not None:
        ctx.register_memory_provider(RemeMemoryProvider())
