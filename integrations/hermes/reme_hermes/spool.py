"""Captures not yet confirmed by reme, kept under ``$HERMES_HOME/reme/pending/``.

A capture is written here before it is sent and removed only once reme has saved it, so a
failed send (server down, a refused token, Hermes killed mid-call) loses no turn: the next
capture, in this session or a later one, sends it again first. Resending is safe: reme merges
turns by id. The file holds the session's turns as Hermes already keeps them in its own
``state.db`` beside it; it is written with mode 0600 all the same.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError


class Pending(BaseModel):
    session_id: str
    turns: list[dict[str, str]]
    flush: bool = False


class Spool:
    def __init__(self, folder: Path):
        self.folder = folder

    def _path(self, session_id: str) -> Path:
        return self.folder / f"{session_id}.json"

    def put(self, pending: Pending) -> None:
        """Keep ``pending`` (replacing what the session had: turns only ever grow)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self._path(pending.session_id)
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(pending.model_dump_json())
        tmp.replace(path)

    def drop(self, session_id: str) -> None:
        self._path(session_id).unlink(missing_ok=True)

    def waiting(self) -> list[Pending]:
        """Every capture still to send, oldest first; an unreadable file is left for a person
        (and named by :meth:`broken`) rather than deleted."""
        found: list[tuple[float, Pending]] = []
        for path in self._files():
            loaded = _load(path)
            if loaded is not None:
                found.append((path.stat().st_mtime, loaded))
        return [p for _, p in sorted(found, key=lambda item: item[0])]

    def broken(self) -> list[Path]:
        return [path for path in self._files() if _load(path) is None]

    def _files(self) -> list[Path]:
        return sorted(self.folder.glob("*.json")) if self.folder.is_dir() else []


def _load(path: Path) -> Pending | None:
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
        return Pending.model_validate(data)
    except (OSError, ValueError, ValidationError):
        return None
