"""The cache of installed host programs (``$XDG_CACHE_HOME/reme/hosts``, else ``~/.cache/...``),
safe for several checkouts and test runs at once.

Each install lives in its own folder, complete once its stamp file is written (last). A build
holds an exclusive ``fcntl`` lock on ``<folder>.lock``: a second process wanting the same folder
waits for it, then finds the stamp written and uses the install instead of rebuilding it under
the first one's feet. An install whose contents depend on a checkout (an editable ``pip install
-e`` of it) is keyed by that checkout (``checkout_key``), so two checkouts never share, or
rebuild, each other's.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

STAMP = "reme-host.stamp"


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/reme/hosts``, else ``~/.cache/reme/hosts``."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "reme" / "hosts"


def checkout_key(paths: Iterable[Path]) -> str:
    """A short name for the checkout folders ``paths`` (their resolved locations)."""
    joined = "\0".join(str(Path(p).resolve()) for p in paths)
    return hashlib.sha256(joined.encode()).hexdigest()[:12]


def is_built(folder: Path, stamp: str) -> bool:
    marker = folder / STAMP
    return marker.is_file() and marker.read_text(encoding="utf-8") == stamp


@contextmanager
def build_lock(folder: Path) -> Iterator[None]:
    """Hold the exclusive lock on ``folder``'s build, waiting while another process holds it."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with (folder.parent / f"{folder.name}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def ensure(folder: Path, stamp: str, build: Callable[[Path], None]) -> Path:
    """``folder``, built by ``build(folder)`` (into an emptied folder) unless it already holds
    the install ``stamp`` names. A build that raises leaves no stamp, so the next call rebuilds."""
    if is_built(folder, stamp):
        return folder
    with build_lock(folder):
        if is_built(folder, stamp):  # built by another process while this one waited
            return folder
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        build(folder)
        partial = folder / f"{STAMP}.partial"
        partial.write_text(stamp, encoding="utf-8")
        partial.replace(folder / STAMP)
    return folder
