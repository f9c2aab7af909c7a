"""Where the host integrations' own files are: the ``integrations/`` folder of a reme checkout.

`reme integrate` points a host at files reme ships beside its packages (the Claude Code hook,
the Codex notify program, the Hermes provider, the built OpenClaw plugin), run by absolute path.
They are there in a source checkout or an editable install (the README's install); a wheel
installed elsewhere has no such folder, so ``REME_INTEGRATIONS_DIR`` names one (a checkout's
``integrations/``), read when this module is imported.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV = "REME_INTEGRATIONS_DIR"


def integrations_dir() -> Path:
    given = os.environ.get(ENV, "").strip()
    if given:
        return Path(given).expanduser().resolve()
    return Path(__file__).resolve().parents[2] / "integrations"


INTEGRATIONS_DIR = integrations_dir()
MISSING_HINT = (
    f"integrations/ folder (a source checkout or an editable install), or {ENV} naming "
    "a checkout's integrations/ folder"
)
