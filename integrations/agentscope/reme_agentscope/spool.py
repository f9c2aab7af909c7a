"""The turns reme did not take yet, kept on disk until the next capture hands them over.

One JSON file per session, ``<spool>/<session_id>.json`` holding ``{"session_id", "messages"}``,
written atomically (a temp file renamed over it), so a crash mid-write never leaves half a file
to read back. The same design as the QwenPaw plugin's ``reme-spool/`` (integrations/qwenpaw/):
each turn carries its message id, and reme adds a turn it already has once, so sending a kept
turn again never doubles it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

STATE_ENV = "XDG_STATE_HOME"
# One capture at a time per process: reading, sending and rewriting the spool is one step.
LOCK = threading.Lock()


def default_spool(target: str) -> Path:
    """``$XDG_STATE_HOME/reme/agentscope-spool/<12 hex of target>`` (else ``~/.local/state``):
    one folder per workspace or server, so what was kept goes back where it was meant to."""
    state = os.environ.get(STATE_ENV) or str(Path.home() / ".local" / "state")
    digest = hashlib.sha256(target.encode("utf-8")).hexdigest()[:12]
    return Path(state) / "reme" / "agentscope-spool" / digest


class Spool:
    """The folder of kept captures."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder).expanduser()

    def _path(self, session_id: str) -> Path:
        # Session ids come from the agent; keep the file name plain whatever they hold.
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in session_id)
        return self.folder / f"{safe.strip('.') or 'session'}.json"

    def waiting(self) -> list[dict[str, Any]]:
        """The kept captures, oldest first; a file that is not one is left where it is and named
        once in the log."""
        if not self.folder.is_dir():
            return []
        out: list[dict[str, Any]] = []
        for path in sorted(self.folder.glob("*.json"), key=lambda p: (p.stat().st_mtime, p.name)):
            try:
                kept = json.loads(path.read_text(encoding="utf-8"))
                messages = kept.get("messages")
                if (
                    isinstance(kept.get("session_id"), str)
                    and isinstance(messages, list)
                    and messages
                    and all(isinstance(m, dict) for m in messages)
                ):
                    out.append(kept)
                    continue
            except (OSError, ValueError, AttributeError):
                pass
            log.warning("reme capture: %s is not a capture this memory kept; left as it is", path)
        return out

    def keep(self, payload: dict[str, Any]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        target = self._path(payload["session_id"])
        temp = target.with_name(f"{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        temp.write_text(json.dumps(payload, ensure_ascii=False), encoding="utf-8")
        temp.replace(target)  # atomic: a half-written file is never read back

    def forget(self, session_id: str) -> None:
        self._path(session_id).unlink(missing_ok=True)
