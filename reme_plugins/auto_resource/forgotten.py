"""Resource files whose note was purged but which the user kept (``reme forget --purge
--keep-source``): ``.reme/auto_resource/forgotten.json``, path -> the content hash kept.

A file listed with the bytes it has is not noted again (the run lists it under ``skipped``);
changed bytes are a new file, noted as any other, and the entry goes. Only the path and the hash
are kept: nothing of the purged note.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from reme_core.api import RemeError, atomic_write, content_hash, named_lock

FILE = Path("auto_resource") / "forgotten.json"
LOCK = "auto_resource:forgotten"
SKIPPED = (
    "its note was purged and the file kept (reme forget --purge --keep-source): it is not noted "
    "again; delete it, or change it to note it again"
)


def load_forgotten(state_dir: Path) -> dict[str, str]:
    path = state_dir / FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise RemeError(
            f"the auto_resource list of forgotten files {path} is damaged ({exc}); move it aside "
            "to note those files again"
        ) from None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict):
        raise RemeError(f"the auto_resource list of forgotten files {path} has no files mapping")
    return {str(k): str(v) for k, v in files.items()}


def _save(state_dir: Path, files: Mapping[str, str]) -> None:
    data = json.dumps({"version": 1, "files": dict(sorted(files.items()))}, indent=1)
    atomic_write(state_dir / FILE, (data + "\n").encode("utf-8"))


def remember(state_dir: Path, root: Path, sources: Mapping[str, str]) -> list[str]:
    """Record the kept ``sources`` (path -> its note) with their bytes' hash; returns the state
    file changed (relative to ``state_dir``)."""
    if not sources:
        return []
    with named_lock(state_dir, LOCK):
        files = load_forgotten(state_dir)
        for rel in sources:
            try:
                files[rel] = content_hash((root / rel).read_bytes())
            except OSError:
                continue  # gone meanwhile: nothing to skip
        _save(state_dir, files)
    return [FILE.as_posix()]


def still_forgotten(state_dir: Path, rel: str, digest: str) -> bool:
    """Whether ``rel`` with these bytes is a kept file of a purged note; an entry whose bytes
    changed is dropped (the file is new)."""
    files = load_forgotten(state_dir)
    if rel not in files:
        return False
    if files[rel] == digest:
        return True
    with named_lock(state_dir, LOCK):
        files = load_forgotten(state_dir)
        if files.get(rel) not in (None, digest):
            del files[rel]
            _save(state_dir, files)
    return False
