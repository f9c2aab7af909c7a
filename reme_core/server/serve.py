"""``reme serve``: one process, one port: the HTTP API, MCP at ``/mcp``, a watcher per workspace
and the scheduler.

Start: refuse a non-loopback bind without auth, take the single-writer lock of every served
workspace, create the first token, open (index, watch) the default workspace, bind the socket,
then publish ``.reme/server.json`` once the app is up. Stop (Ctrl-C, SIGTERM, ``stop()``):
uvicorn stops accepting and lets running requests finish, the scheduler stops, then every
workspace waits for calls still running, persists its indexes and closes; ``server.json`` goes,
and the lock is released last.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import uvicorn

from reme_core.errors import RemeError
from reme_core.plugins import Plugins
from reme_core.runtime import STATE_DIR
from reme_core.server import log_mask
from reme_core.server.app import Hook, Lifespan, create_app
from reme_core.server.auth import TOKEN_ENV, TOKEN_FILE, TokenStore
from reme_core.server.discovery import (
    Discovery,
    ServerLock,
    now,
    remove_discovery,
    write_discovery,
)
from reme_core.server.dispatch import run_operation
from reme_core.server.principal import Principal
from reme_core.server.security import WILDCARD_HOSTS, check_bind, is_loopback
from reme_core.server.workspaces import DEFAULT, WorkspaceRegistry
from reme_core.service.operations import Input
from reme_core.settings import Settings

log = logging.getLogger("reme.server")

GRACE_SECONDS = 10
"""How long uvicorn waits for open connections (an MCP stream never ends by itself). A write
running on a worker thread is not cut by this: the workspaces wait for it before closing."""
CLOSE_TIMEOUT_SECONDS = 300.0
"""How long closing waits for running calls (a pipeline may be mid model call)."""


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Server:
    """A ``reme serve`` instance: ``run()`` blocks until ``stop()`` or a signal."""

    def __init__(
        self,
        settings: Settings,
        *,
        plugins: Plugins | None = None,
        echo: Callable[[str], None] = _stderr,
        log_level: str = "info",
        with_mcp: bool = True,
        with_scheduler: bool = True,
    ):
        check_bind(settings.server)
        self.settings = settings
        self.registry = WorkspaceRegistry(settings, plugins)
        self.echo = echo
        self.log_level = log_level
        self.with_mcp = with_mcp
        self.with_scheduler = with_scheduler
        self.url: str | None = None
        self.ready = threading.Event()
        """Set once the app is up and ``server.json`` is written."""
        self._uvicorn: uvicorn.Server | None = None
        self._stopping = threading.Event()
        self._first_token: Path | None = None

    def stop(self) -> None:
        """Ask for a graceful shutdown (from any thread)."""
        self._stopping.set()
        if self._uvicorn is not None:
            self._uvicorn.should_exit = True

    def run(self) -> None:
        lock = ServerLock(self.registry.roots)
        lock.acquire()
        sock: socket.socket | None = None
        restore = _terminate_as_interrupt()
        try:
            store = self._token_store()
            # Open the default workspace now, so a broken one fails the start, not a request.
            self.registry.get(DEFAULT)
            sock = _bind(self.settings.server.host, self.settings.server.port)
            self.url = _url(self.settings.server.host, sock)
            app = self._app(store)
            config = uvicorn.Config(
                app,
                lifespan="on",
                log_level=self.log_level,
                timeout_graceful_shutdown=GRACE_SECONDS,
            )
            # After uvicorn set up its loggers: the access log would print every login URL.
            log_mask.install()
            self._uvicorn = uvicorn.Server(config)
            if not self._stopping.is_set():
                self._uvicorn.run(sockets=[sock])
            if not self.ready.is_set() and not self._stopping.is_set():
                raise RemeError("the server did not start (see the log above)")
        except KeyboardInterrupt:
            pass  # Ctrl-C or SIGTERM: shut down as asked
        finally:
            failed = self.registry.close_all(CLOSE_TIMEOUT_SECONDS)
            for problem in failed:
                self.echo(f"warning: closing workspace {problem}")
            for root in self.registry.roots.values():
                remove_discovery(root, os.getpid())
            lock.release()
            if sock is not None:
                sock.close()
            restore()
            if self.ready.is_set():
                self.echo("reme server stopped")

    # -- wiring ------------------------------------------------------------------------------

    def _token_store(self) -> TokenStore | None:
        if not self.settings.server.auth:
            return None
        store = TokenStore(self.registry.root(DEFAULT) / STATE_DIR)
        self._first_token = store.ensure_local_token()
        return store

    def _app(self, store: TokenStore | None) -> Any:
        lifespans: list[Lifespan] = []
        on_startup: list[Hook] = []
        on_shutdown: list[Hook] = []
        mcp_app = None
        if self.with_mcp:
            mcp_app, mcp_lifespan = _mcp(self.registry, self.echo)
            if mcp_lifespan is not None:
                lifespans.append(mcp_lifespan)
        if self.with_scheduler:
            for scheduler in _schedulers(self.registry, self.echo):
                on_startup.append(scheduler.start)
                on_shutdown.append(scheduler.stop)
        on_startup.append(self._publish)
        on_startup.append(self._start_warm_up)
        return create_app(
            self.settings,
            self.registry,
            store,
            mcp_app=mcp_app,
            lifespans=lifespans,
            on_startup=on_startup,
            on_shutdown=on_shutdown,
        )

    def _publish(self) -> None:
        """Write ``server.json`` in every served workspace, and say where to connect."""
        assert self.url is not None
        token_file = self.registry.root(DEFAULT) / STATE_DIR / TOKEN_FILE
        names = self.registry.names
        started = now()
        for name, root in self.registry.roots.items():
            write_discovery(
                root,
                Discovery(
                    url=self.url,
                    pid=os.getpid(),
                    started=started,
                    workspace=name,
                    workspaces=names,
                    auth=self.settings.server.auth,
                    token_file=str(token_file) if token_file.is_file() else None,
                ),
            )
        self.echo(
            f"reme serving {self.registry.root(DEFAULT)} at {self.url} "
            f"(API docs {self.url}/docs, MCP {self.url}/mcp)"
        )
        host = self.settings.server.host
        if not is_loopback(host) and not self.settings.server.allowed_hosts:
            self.echo(
                f"note: bound to {host}; other machines must reach it by a name or address "
                "listed in server.allowed_hosts (Host check against DNS rebinding)"
            )
        if len(names) > 1:
            self.echo(f"workspaces: {', '.join(names)} (choose one with X-Reme-Workspace)")
        if not self.settings.server.auth:
            self.echo("auth is off (server.auth: false): any local process may call this server")
        elif self._first_token is not None:
            self.echo(
                f"created an admin token for all workspaces in {self._first_token} (mode 0600).\n"
                f'Use it:  export {TOKEN_ENV}="$(cat {self._first_token})"\n'
                f'         curl -H "Authorization: Bearer ${TOKEN_ENV}" {self.url}/status\n'
                "More tokens, narrower: reme token create --profile read --workspace-name NAME"
            )
        self.echo(f"studio: {self._studio_line(token_file)}")
        self.ready.set()

    def _start_warm_up(self) -> None:
        """Load the default workspace's embedding model on a thread once the server is up:
        the start is not delayed, and the first search does not wait seconds for the model."""
        threading.Thread(target=self._warm_up, name="reme-warm-up", daemon=True).start()

    def _warm_up(self) -> None:
        try:
            with self.registry.use(DEFAULT) as reme:
                reme.warm_up()
        except Exception as exc:  # the search arm loads lazily instead: never stop the server
            if not self._stopping.is_set():
                self.echo(
                    f"warning: warming the embedding model failed ({exc}); it loads on "
                    "the first search instead"
                )

    def _studio_line(self, token_file: Path) -> str:
        """The studio's address. The login URL carries the admin token only on the start that
        created it: a start banner ends up in terminals, logs and screen shares."""
        if not self.settings.server.auth:
            return f"{self.url}/"
        if self._first_token is not None:
            return _studio_url(self.url, token_file)
        return f"{self.url}/ (log in: {self.url}/?token=TOKEN, the admin token is in {token_file})"


def _studio_url(url: str, token_file: Path | None) -> str:
    """The studio's address; with auth on, a login URL carrying the local admin token (as
    Jupyter prints one): opening it sets a session cookie and drops the token from the URL."""
    if token_file is None:
        return f"{url}/"
    try:
        secret = token_file.read_text(encoding="utf-8").strip()
    except OSError:
        secret = ""
    if not secret:
        return f"{url}/ (log in with a token from `reme token create`)"
    return f"{url}/?{urlencode({'token': secret})}"


def serve(settings: Settings, **options: Any) -> None:
    """Run a server until interrupted (see ``Server``)."""
    Server(settings, **options).run()


def _mcp(registry: WorkspaceRegistry, echo: Callable[[str], None]) -> tuple[Any, Any]:
    try:
        from reme_core.server.mcp_server import build_mcp_app
    except ImportError as exc:
        echo(f"warning: MCP is off ({exc})")
        return None, None

    def runner(principal: Principal, workspace: str, name: str, payload: Input) -> Any:
        # The same path as HTTP calls: in-flight counting (shutdown waits), one run per
        # pipeline at a time, last runs in /status.
        return run_operation(registry, principal, workspace, name, payload)

    app, lifespan = build_mcp_app(registry.get, registry.names, runner=runner)
    return app, lifespan


def _job_serial_keys(job_name: str, settings: Settings) -> list[str]:
    """The serial locks a scheduled job holds: its own, and those of the pipelines it runs (an
    API run of the same pipeline would otherwise overlap it, and each run's reported usage would
    count the other's model calls). Always taken in this order; an API call holds one lock
    only, so no cycle can form."""
    if job_name == "auto_memory_flush":
        return [job_name, "auto_memory", "auto_memory_cc", "auto_memory_codex"]
    if job_name == "resource_inbox":
        return [job_name, "auto_resource"]
    scheduled = settings.server.schedule.pipelines.get(job_name)
    if scheduled is not None and scheduled.pipeline != job_name:
        return [job_name, scheduled.pipeline]
    return [job_name]


def _schedulers(registry: WorkspaceRegistry, echo: Callable[[str], None]) -> list[Any]:
    """One scheduler per workspace; its jobs run through the registry, so shutdown waits for a
    job in progress and ``/status`` lists its runs."""
    try:
        from reme_core.server.jobs import run_job
        from reme_core.server.scheduler import STATE_FILE, Scheduler
    except ImportError as exc:
        echo(f"warning: the scheduler is off ({exc})")
        return []
    schedulers = {}
    for name, root in registry.roots.items():

        def job(job_name: str, name: str = name) -> Any:
            started = time.time()
            try:
                with ExitStack() as held:
                    for key in _job_serial_keys(job_name, registry.settings):
                        held.enter_context(registry.serial(name, key))
                    reme = held.enter_context(registry.use(name))
                    result = run_job(reme, job_name)
            except Exception as exc:
                registry.record_run(name, f"scheduled {job_name}", started, exc)
                raise
            registry.record_run(name, f"scheduled {job_name}", started)
            return result

        settings = registry.settings.model_copy(update={"workspace": root})
        schedulers[name] = Scheduler(settings, job, root / STATE_DIR / STATE_FILE)
    registry.add_status_section("schedule", lambda name: schedulers[name].status())
    return list(schedulers.values())


def _bind(host: str, port: int) -> socket.socket:
    """Bind and listen before publishing, so the address in ``server.json`` is live."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(address)
            sock.listen(socket.SOMAXCONN)
        except OSError:
            sock.close()
            raise
    except OSError as exc:
        raise RemeError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc} "
            "(choose another port with --port)"
        ) from None
    return sock


def _url(host: str, sock: socket.socket) -> str:
    port = sock.getsockname()[1]
    if host in WILDCARD_HOSTS:
        host = "127.0.0.1" if sock.family == socket.AF_INET else "::1"
    if ":" in host:
        host = f"[{host.strip('[]')}]"
    return f"http://{host}:{port}"


def _terminate_as_interrupt() -> Callable[[], None]:
    """SIGTERM shuts down like Ctrl-C (uvicorn re-raises the signal after its own graceful stop;
    with the default handler that would kill the process before the indexes are persisted)."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    return lambda: signal.signal(signal.SIGTERM, previous)
