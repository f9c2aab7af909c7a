"""One server per workspace, and how clients find it.

``.reme/server.lock`` is held (an OS file lock, released by the kernel if the process dies) for as
long as a server serves the workspace, so a second server is refused. ``.reme/server.json`` says
where the holder listens; it is written once the socket is bound and removed on shutdown. A
``server.json`` whose lock is free was left by a server that crashed: ``read_discovery`` ignores
it.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout
from pydantic import BaseModel

from reme_core.errors import RemeError
from reme_core.runtime import STATE_DIR

LOCK_FILE = "server.lock"
DISCOVERY_FILE = "server.json"


class ServerRunningError(RemeError):
    """Another server already serves this workspace."""

    http_status = 409


class Discovery(BaseModel):
    """The contents of ``.reme/server.json``."""

    url: str
    pid: int
    started: str
    workspace: str
    """This workspace's name on that server: send it as ``X-Reme-Workspace``."""
    workspaces: list[str]
    auth: bool
    token_file: str | None = None
    """Where the first admin token was written (the secret is never in this file)."""


class ServerLock:
    """Holds ``.reme/server.lock`` in every served workspace, or none of them."""

    def __init__(self, roots: Mapping[str, Path]):
        self.roots = dict(roots)
        self._held: list[FileLock] = []

    def acquire(self) -> None:
        """Take every lock without waiting; ServerRunningError names the server holding one."""
        for name, root in self.roots.items():
            state = root / STATE_DIR
            state.mkdir(exist_ok=True)
            lock = FileLock(state / LOCK_FILE)
            try:
                lock.acquire(blocking=False)
            except Timeout:
                self.release()
                raise ServerRunningError(_busy_message(name, root)) from None
            self._held.append(lock)

    def release(self) -> None:
        for lock in self._held:
            lock.release()
        self._held.clear()


def _busy_message(name: str, root: Path) -> str:
    found = _read(root)
    where = (
        f"the server at {found.url} (pid {found.pid})"
        if found is not None
        else "another reme server (still starting: it has not written .reme/server.json yet)"
    )
    return (
        f"workspace {name!r} ({root}) is already served by {where}; "
        "use that server, or stop it before starting another"
    )


def write_discovery(root: Path, info: Discovery) -> None:
    """Write ``server.json`` atomically, so a reader never sees half of it."""
    state = root / STATE_DIR
    fd, tmp = tempfile.mkstemp(dir=state, prefix=".server-", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(info.model_dump(mode="json"), out, indent=2)
    os.replace(tmp, state / DISCOVERY_FILE)


def remove_discovery(root: Path, pid: int | None = None) -> None:
    """Remove ``server.json`` if it is this process's (``pid``), or unconditionally."""
    path = root / STATE_DIR / DISCOVERY_FILE
    found = _read(root)
    if found is not None and pid is not None and found.pid != pid:
        return
    path.unlink(missing_ok=True)


def lock_held(root: Path) -> bool:
    """Whether a server holds ``root``'s ``.reme/server.lock`` (running, or still starting).
    Creates nothing: a workspace no server ever served has no lock file."""
    path = root / STATE_DIR / LOCK_FILE
    if not path.exists():
        return False
    probe = FileLock(path)
    try:
        probe.acquire(blocking=False)
    except Timeout:
        return True
    probe.release()
    return False


def read_discovery(root: Path) -> Discovery | None:
    """The server serving ``root``, or None when none holds its lock (or the one holding it is
    still starting: it has not written ``server.json`` yet; ``lock_held`` tells them apart)."""
    return _read(root) if lock_held(root) else None


def _read(root: Path) -> Discovery | None:
    try:
        data: Any = json.loads((root / STATE_DIR / DISCOVERY_FILE).read_text(encoding="utf-8"))
        return Discovery.model_validate(data)
    except (OSError, ValueError):
        return None


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
