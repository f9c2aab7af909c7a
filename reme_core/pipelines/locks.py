"""Named locks that hold across threads and processes (a server and a CLI on one workspace)."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from reme_core.errors import RemeError


class LockTimeout(RemeError):
    """Another run holds the lock longer than the caller is willing to wait."""


_thread_locks: dict[str, threading.Lock] = {}
_guard = threading.Lock()


@contextmanager
def named_lock(state_dir: Path, name: str, timeout: float = 300.0) -> Iterator[None]:
    """Hold lock ``name`` (any text, e.g. ``auto_memory:<session id>``) for the block.

    The lock file lives in ``<state_dir>/locks/`` under a hash of the name, so any text is a
    safe name. A thread lock is taken first because file locks are per process on some systems.
    """
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:32]
    folder = state_dir / "locks"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{digest}.lock"
    with _guard:
        thread_lock = _thread_locks.setdefault(str(path), threading.Lock())
    if not thread_lock.acquire(timeout=timeout):
        raise LockTimeout(f"lock {name!r} is held by another run (waited {timeout:g} s)")
    try:
        file_lock = FileLock(str(path), timeout=timeout)
        try:
            file_lock.acquire()
        except Timeout:
            raise LockTimeout(
                f"lock {name!r} is held by another process (waited {timeout:g} s)"
            ) from None
        try:
            yield
        finally:
            file_lock.release()
    finally:
        thread_lock.release()
