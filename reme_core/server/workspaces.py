"""The workspaces one server serves: ``default`` (the one ``reme serve`` was started on) plus the
named ones in ``server.workspaces``. Each is its own folder with its own indexes, opened on first
use, indexed, and then kept fresh by a watcher.

Every call goes through ``use(name)``, which counts it in flight: ``close_all`` refuses new calls,
waits for the running ones (a write half done is finished, not cut), then stops the watchers and
closes each workspace, which persists its indexes.
"""

from __future__ import annotations

import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from reme_core.errors import ConfigError, NotFoundError, RemeError, WorkspaceError
from reme_core.index.indexer import IndexReport
from reme_core.index.watcher import Watcher
from reme_core.plugins import Plugins, load_plugins
from reme_core.runtime import Reme
from reme_core.server.discovery import now
from reme_core.settings import Settings

DEFAULT = "default"
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
RECENT = 20
"""How many runs and errors each workspace remembers for ``/status``."""


class ShuttingDownError(RemeError):
    """The server is stopping and takes no new calls."""

    http_status = 503


@dataclass
class WorkspaceState:
    """What the server knows about one workspace beyond what its indexes say."""

    root: Path
    reme: Reme | None = None
    watcher: Watcher | None = None
    opened_at: str | None = None
    last_index: dict[str, Any] | None = None
    watch_error: str | None = None
    open_lock: threading.Lock = field(default_factory=threading.Lock)
    serial: dict[str, threading.Lock] = field(default_factory=dict)
    runs: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=RECENT))
    errors: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=RECENT))


class WorkspaceRegistry:
    """Name -> lazily opened ``Reme``; see the module docstring for the lifecycle."""

    def __init__(
        self,
        settings: Settings,
        plugins: Plugins | None = None,
        *,
        watch: bool = True,
    ):
        self.settings = settings
        self.plugins = plugins
        self.watch = watch
        self._states = {name: WorkspaceState(root) for name, root in _roots(settings).items()}
        self._lock = threading.Lock()  # guards the in-flight count and closing
        self._idle = threading.Condition(self._lock)
        self._in_flight = 0
        self._closing = False
        self._sections: dict[str, Callable[[str], Any]] = {}
        unknown = [n for n in settings.server.shared_workspaces if n not in self._states]
        if unknown:
            raise ConfigError(
                f"server.shared_workspaces: {', '.join(map(repr, unknown))} "
                f"not served; served workspaces: {', '.join(self.names)}"
            )

    @property
    def names(self) -> list[str]:
        return list(self._states)

    @property
    def roots(self) -> dict[str, Path]:
        return {name: state.root for name, state in self._states.items()}

    def root(self, name: str) -> Path:
        return self._state(name).root

    def get(self, name: str) -> Reme:
        """The open workspace, opening and indexing it on first use. Prefer ``use``: a call made
        on what ``get`` returned is not waited for at shutdown."""
        state = self._state(name)
        self._refuse_if_closing()
        return self._ensure_open(name, state)

    @contextmanager
    def use(self, name: str) -> Iterator[Reme]:
        """The open workspace for one call; shutdown waits until the call returns."""
        state = self._state(name)
        with self._lock:
            self._refuse_if_closing()
            self._in_flight += 1
        try:
            yield self._ensure_open(name, state)
        finally:
            with self._lock:
                self._in_flight -= 1
                self._idle.notify_all()

    def serial(self, name: str, key: str) -> threading.Lock:
        """A lock that runs of ``key`` (a pipeline) on workspace ``name`` take, one at a time:
        a pipeline's usage counters and cursors assume no concurrent run of itself."""
        state = self._state(name)
        with self._lock:
            return state.serial.setdefault(key, threading.Lock())

    def record_run(
        self, name: str, operation: str, started: float, error: BaseException | None = None
    ) -> None:
        """Remember a pipeline or maintenance run for ``/status`` (the scheduler calls it too)."""
        entry = {
            "operation": operation,
            "at": _iso(started),
            "seconds": round(time.time() - started, 3),
            "ok": error is None,
            "error": None if error is None else f"{type(error).__name__}: {error}",
        }
        state = self._state(name)
        state.runs.append(entry)
        if error is not None:
            self.record_error(name, operation, error)

    def record_error(self, name: str, where: str, error: BaseException | str) -> None:
        text = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
        self._state(name).errors.append({"at": now(), "where": where, "error": text})

    def add_status_section(self, key: str, section: Callable[[str], Any]) -> None:
        """Add ``key: section(name)`` to each workspace's ``/status`` (e.g. the scheduler's)."""
        self._sections[key] = section

    def degraded(self, name: str) -> list[str]:
        """Server-side components of this workspace that are not working (searches say so)."""
        state = self._state(name)
        found = []
        if state.watch_error:
            found.append(f"watcher: {state.watch_error}; edits made outside reme are not indexed")
        if state.watcher is not None and state.watcher.errors:
            found.append(f"watcher: last batch failed: {state.watcher.errors[-1]}")
        return found

    def server_status(self, name: str) -> dict[str, Any]:
        """The server's view of one workspace, added to ``Reme.status()``."""
        state = self._state(name)
        reme = state.reme
        history: list[dict[str, Any]] = []
        history_error = None
        if reme is not None:
            try:
                history = [e.model_dump() for e in reme.history.entries(5)]
            except RemeError as exc:
                history_error = str(exc)
        degraded = self.degraded(name)
        vectors = reme.vectors.status() if reme is not None and reme.vectors is not None else None
        if vectors is not None and vectors["state"] == "unavailable":
            degraded.insert(0, f"vectors: {vectors.get('reason')}; search is keyword-only")
        elif vectors is not None and vectors["state"] in ("building", "incomplete"):
            degraded.insert(
                0,
                f"vectors: {vectors['state']}, {vectors['embedded']} of {vectors['total']} "
                "chunks embedded; vector search sees only those",
            )
        sections = {}
        for key, section in self._sections.items():
            try:
                sections[key] = section(name)
            except Exception as exc:  # a broken section is itself a problem to report
                sections[key] = {"error": f"{type(exc).__name__}: {exc}"}
                degraded.append(f"{key}: {type(exc).__name__}: {exc}")
        return {
            "name": name,
            "opened_at": state.opened_at,
            "index": {
                "watching": state.watcher is not None and state.watch_error is None,
                "last_update": state.last_index,
            },
            "last_runs": list(reversed(state.runs)),
            "history": history,
            "errors": [
                *reversed(state.errors),
                *([{"where": "history", "error": history_error}] if history_error else []),
            ],
            "degraded": degraded,
            **sections,
        }

    def close_all(self, timeout: float = 60.0) -> list[str]:
        """Refuse new calls, wait for running ones, stop watchers, persist and close each
        workspace. Returns the names of workspaces that failed to close cleanly."""
        with self._lock:
            self._closing = True
            deadline = time.monotonic() + timeout
            while self._in_flight and time.monotonic() < deadline:
                self._idle.wait(max(0.0, deadline - time.monotonic()))
        failed = []
        for name, state in self._states.items():
            try:
                state.open_lock.acquire()  # an open racing with shutdown finishes first
                if state.watcher is not None:
                    state.watcher.stop()  # flushes a pending batch into the index first
                if state.reme is not None:
                    state.reme.close()
            except Exception as exc:  # one broken workspace must not keep the others open
                failed.append(f"{name}: {type(exc).__name__}: {exc}")
            finally:
                state.watcher = None
                state.reme = None
                state.open_lock.release()
        return failed

    # -- internals ---------------------------------------------------------------------------

    def _state(self, name: str) -> WorkspaceState:
        state = self._states.get(name)
        if state is None:
            raise NotFoundError(
                f"no workspace named {name!r}; this server serves {', '.join(self.names)}"
            )
        return state

    def _refuse_if_closing(self) -> None:
        if self._closing:
            raise ShuttingDownError("the server is shutting down; retry once it is back")

    def _ensure_open(self, name: str, state: WorkspaceState) -> Reme:
        # Per workspace: opening (an index pass) one workspace does not hold up the others.
        with state.open_lock:
            self._refuse_if_closing()
            if state.reme is None:
                self._open(name, state)
            assert state.reme is not None
            return state.reme

    def _open(self, name: str, state: WorkspaceState) -> None:
        settings = self.settings.model_copy(update={"workspace": state.root})
        reme = Reme(settings, self.plugins or load_plugins())
        try:
            # Vectors embed on a thread so the server answers (keyword-only) meanwhile.
            self._note_index(state, reme.index(vectors="background"))
        except BaseException:
            reme.close()
            raise
        state.reme = reme
        state.opened_at = now()
        if self.watch:
            try:
                state.watcher = reme.watch(on_report=lambda r: self._note_index(state, r))
            except Exception as exc:  # e.g. inotify limits: serve anyway, and say so
                state.watch_error = f"{type(exc).__name__}: {exc}"
                self.record_error(name, "watcher", exc)

    @staticmethod
    def _note_index(state: WorkspaceState, report: IndexReport) -> None:
        state.last_index = {
            "at": now(),
            "indexed": len(report.indexed),
            "removed": len(report.removed),
            "problems": len(report.problems),
        }


def _roots(settings: Settings) -> dict[str, Path]:
    roots = {DEFAULT: settings.workspace_path()}
    if not roots[DEFAULT].is_dir():
        raise WorkspaceError(
            f"workspace {roots[DEFAULT]} does not exist; create it with `reme init {roots[DEFAULT]}`"
        )
    for name, path in settings.server.workspaces.items():
        if name == DEFAULT or not NAME_PATTERN.match(name):
            raise ConfigError(
                f"server.workspaces.{name}: a workspace name is letters, digits, '.', '_' or '-' "
                f"(and not {DEFAULT!r}, the workspace the server was started on)"
            )
        root = Path(path).expanduser().resolve()
        if not root.is_dir():
            raise ConfigError(f"server.workspaces.{name}: {root} is not a folder")
        twin = next((n for n, r in roots.items() if r == root), None)
        if twin is not None:
            raise ConfigError(
                f"server.workspaces.{name}: {root} is already served as {twin!r}; "
                "one folder, one name"
            )
        roots[name] = root
    return roots


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="seconds")
