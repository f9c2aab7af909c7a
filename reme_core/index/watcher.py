"""Watches the workspace for edits made outside the API (an editor, git pull) and reindexes them.

Events are debounced: a burst (an editor's save dance, a checkout) becomes one indexing pass once
the folder has been quiet for ``debounce`` seconds. The indexer checks content hashes, so spurious
events cost a hash, not a reindex.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

OnBatch = Callable[[list[str]], None]

READ_ONLY_EVENTS = frozenset({"opened", "closed_no_write"})
"""inotify reports a file opened for reading, and closed unchanged: indexing reads every file it
is handed, so reacting to these made each pass schedule the next one, forever (and two watchers
on one folder fed each other). Only changes count."""


_KEPT_ERRORS = 20
"""Failed batches remembered in a row (the latest is what status shows)."""


class Watcher(FileSystemEventHandler):
    """Collects touched paths and hands them to ``on_batch`` after a quiet period."""

    def __init__(self, root: Path, on_batch: OnBatch, *, debounce: float = 0.5):
        self.root = root.resolve()
        self.on_batch = on_batch
        self.debounce = debounce
        self._pending: set[str] = set()
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._observer = Observer()
        self.errors: list[str] = []
        """The failures of the batches since the last one that went through (cleared by it):
        a cause that is gone stops being reported as soon as the next batch indexes."""

    def start(self) -> None:
        self._observer.schedule(self, str(self.root), recursive=True)
        self._observer.start()

    def stop(self) -> None:
        self._observer.stop()
        self._observer.join()
        with self._lock:
            if self._timer:
                self._timer.cancel()
        self.flush()

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.is_directory or event.event_type in READ_ONLY_EVENTS:
            return
        touched = [event.src_path, getattr(event, "dest_path", "") or ""]
        with self._lock:
            for raw in touched:
                relative = self._relative(raw)
                if relative:
                    self._pending.add(relative)
            if self._timer:
                self._timer.cancel()
            self._timer = threading.Timer(self.debounce, self.flush)
            self._timer.daemon = True
            self._timer.start()

    def flush(self) -> None:
        with self._lock:
            batch, self._pending = sorted(self._pending), set()
            self._timer = None
        if not batch:
            return
        try:
            self.on_batch(batch)
        except Exception as exc:
            self.errors.append(f"{type(exc).__name__}: {exc}")
            del self.errors[:-_KEPT_ERRORS]
            return
        self.errors.clear()

    def _relative(self, raw: str | bytes) -> str | None:
        if not raw:
            return None
        path = Path(raw.decode() if isinstance(raw, bytes) else raw)
        try:
            relative = (
                path.resolve().relative_to(self.root)
                if path.exists()
                else path.relative_to(self.root)
            )
        except ValueError:
            return None
        parts = relative.parts
        if not parts or parts[0] in (".reme", ".git"):
            return None
        return relative.as_posix()
