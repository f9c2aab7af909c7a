"""Durable changes on disk: a file replaced whole (temp file, fsync, rename) and the folder entry
fsynced after it.

Everything reme writes under a workspace or its ``.reme/`` goes through ``atomic_write``, so a
reader (or a crash) sees the old file or the new one, never half of it.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def fsync_dir(folder: Path) -> None:
    """Flush a folder's entries (a rename or unlink in it) to disk, where the OS allows it."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return  # some filesystems do not allow opening folders; the rename is still atomic
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes) -> None:
    """Write via a temp file in the same folder, fsync, rename, fsync the folder."""
    folder = path.parent
    folder.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o7777 if path.exists() else 0o644
    # A fixed-length temp name: one built from the note's name went past NAME_MAX for names of
    # 242-255 bytes, which the path check had accepted.
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".reme-write-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_dir(folder)
