"""The journal: an append-only JSONL record of every mutation made through the file tools."""

from __future__ import annotations

import datetime as dt
import json
import os
import threading
from collections import deque
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ValidationError

from reme_core.workspace.atomic import atomic_write

JournalOp = Literal["write", "edit", "frontmatter", "move", "delete"]


class JournalEntry(BaseModel):
    """One mutation: what changed, from which content to which, and who asked."""

    ts: str
    op: JournalOp
    path: str
    to: str | None = None
    before_hash: str | None = None
    after_hash: str | None = None
    actor: str = "api"


class Journal:
    """Appends one JSON line per mutation to ``state_dir/journal.jsonl``, fsynced."""

    def __init__(self, state_dir: Path):
        self.path = Path(state_dir) / "journal.jsonl"
        self._lock = threading.Lock()

    def record(
        self,
        op: JournalOp,
        path: str,
        *,
        to: str | None = None,
        before_hash: str | None = None,
        after_hash: str | None = None,
        actor: str = "api",
    ) -> JournalEntry:
        """Append one entry and make it durable before returning."""
        entry = JournalEntry(
            ts=dt.datetime.now(dt.UTC).isoformat(timespec="microseconds"),
            op=op,
            path=path,
            to=to,
            before_hash=before_hash,
            after_hash=after_hash,
            actor=actor,
        )
        line = (json.dumps(entry.model_dump(), ensure_ascii=False) + "\n").encode("utf-8")
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a+b") as fh:
                if fh.seek(0, os.SEEK_END) > 0:
                    fh.seek(-1, os.SEEK_END)
                    if fh.read(1) != b"\n":
                        line = b"\n" + line  # close a line torn by an earlier crash
                fh.write(line)
                fh.flush()
                os.fsync(fh.fileno())
        return entry

    def drop_paths(self, paths: set[str]) -> int:
        """Rewrite the journal without the entries about ``paths`` (a purged note: the journal
        would otherwise keep its name); returns how many lines went."""
        with self._lock:
            if not self.path.exists():
                return 0
            kept: list[str] = []
            dropped = 0
            with open(self.path, encoding="utf-8") as fh:
                for line in fh:
                    entry = _parse_line(line)
                    if entry is not None and (entry.path in paths or entry.to in paths):
                        dropped += 1
                    elif line.strip():
                        kept.append(line if line.endswith("\n") else line + "\n")
            if dropped:
                atomic_write(self.path, "".join(kept).encode("utf-8"))
            return dropped

    def entries(self, limit: int | None = None) -> list[JournalEntry]:
        """Entries oldest first (newest last); ``limit`` keeps only the newest ones."""
        if not self.path.exists():
            return []
        if limit is not None and limit <= 0:
            return []
        kept: deque[JournalEntry] = deque(maxlen=limit)
        with open(self.path, encoding="utf-8") as fh:
            for line in fh:
                entry = _parse_line(line)
                if entry is not None:
                    kept.append(entry)
        return list(kept)


def _parse_line(line: str) -> JournalEntry | None:
    # A crash mid-append can leave a torn last line; it is skipped, not fatal.
    line = line.strip()
    if not line:
        return None
    try:
        return JournalEntry.model_validate(json.loads(line))
    except (ValueError, ValidationError):
        return None
