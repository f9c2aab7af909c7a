"""A served pair of workspaces for the HTTP API tests: ``default`` (a copy of the example) and
``global`` (one shared note), with one token per profile/workspace combination."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from conftest import DEFAULT_PLUGIN_MODULES, KEYWORD_ONLY_ENV, copy_example
from fastapi.testclient import TestClient

from reme_core.plugins import Plugins
from reme_core.runtime import STATE_DIR
from reme_core.server.app import create_app
from reme_core.server.auth import TokenStore
from reme_core.server.serve import Server
from reme_core.server.workspaces import WorkspaceRegistry
from reme_core.settings import Settings, load_settings

BASE_URL = "http://127.0.0.1"
SHARED_NOTE = "digest/wiki/deploy-checklist.md"
SHARED_TEXT = "---\nname: Deploy checklist\n---\n# Deploy checklist\nAlways deploy on a Tuesday.\n"


def plugins(*extra: object) -> Plugins:
    """The shipped defaults, plus ``extra`` plugin objects."""
    found = Plugins()
    for module in DEFAULT_PLUGIN_MODULES:
        found.register(module)
    for i, plugin in enumerate(extra):
        found.register(plugin, name=f"test_extra_{i}")
    found.collect()
    return found


def make_workspaces(base: Path) -> tuple[Path, Path]:
    project = base / "project"
    copy_example(project)
    shared = base / "global"
    (shared / "digest" / "wiki").mkdir(parents=True)
    (shared / SHARED_NOTE).write_text(SHARED_TEXT, encoding="utf-8")
    return project, shared


def settings_for(project: Path, shared: Path, *extra: str) -> Settings:
    return load_settings(
        overrides=[
            f"workspace={project}",
            f"server.workspaces.global={shared}",
            "server.shared_workspaces=[global]",
            *extra,
        ],
        env=KEYWORD_ONLY_ENV,
    )


@dataclass
class Served:
    client: TestClient
    registry: WorkspaceRegistry
    store: TokenStore
    project: Path
    shared: Path
    tokens: dict[str, str]
    """Name -> secret: admin (all), read, write, admin_project (default only), global_read
    (global only), both_read (default and global)."""

    def headers(self, token: str | None, **extra: str) -> dict[str, str]:
        given = {"Authorization": f"Bearer {self.tokens[token]}"} if token else {}
        return {**given, **extra}

    def post(self, op: str, body: dict | None = None, token: str | None = "admin", **kw):
        headers = self.headers(token, **kw.pop("headers", {}))
        return self.client.post(f"/api/v1/{op}", json=body or {}, headers=headers, **kw)


TOKEN_GRANTS: dict[str, tuple[str, Sequence[str]]] = {
    "admin": ("admin", ["*"]),
    "read": ("read", ["default"]),
    "write": ("write", ["default"]),
    "admin_project": ("admin", ["default"]),
    "global_read": ("read", ["global"]),
    "both_read": ("read", ["default", "global"]),
}


@contextmanager
def served(
    base: Path,
    *extra: str,
    auth: bool = True,
    watch: bool = False,
    manager: Plugins | None = None,
) -> Iterator[Served]:
    project, shared = make_workspaces(base)
    settings = settings_for(project, shared, *extra)
    registry = WorkspaceRegistry(settings, manager or plugins(), watch=watch)
    store = TokenStore(project / STATE_DIR)
    tokens = {name: store.create(p, w)[1] for name, (p, w) in TOKEN_GRANTS.items()}
    app = create_app(settings, registry, store if auth else None)
    try:
        with TestClient(app, base_url=BASE_URL, raise_server_exceptions=False) as client:
            yield Served(client, registry, store, project, shared, tokens)
    finally:
        registry.close_all()


@contextmanager
def running_server(
    workspace: Path, *overrides: str, manager: Plugins | None = None
) -> Iterator[Server]:
    """A real ``reme serve`` for ``workspace`` on a free loopback port, in a thread, ready to
    answer; stopped (in-flight work finished) after the block. ``manager``: its plugins
    (default: the shipped ones)."""
    settings = load_settings(
        overrides=[f"workspace={workspace}", "server.port=0", *overrides], env=KEYWORD_ONLY_ENV
    )
    server = Server(
        settings, plugins=manager or plugins(), echo=lambda _: None, log_level="warning"
    )
    thread = threading.Thread(target=server.run)
    thread.start()
    try:
        assert server.ready.wait(30) and server.url is not None
        yield server
    finally:
        server.stop()
        thread.join(30)
