"""The HTTP API over two served workspaces: every operation is a typed route, results match the
in-process calls, shared-workspace recall, status and degradation, errors as JSON."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from conftest import FAKE_VECTORS
from fastapi.testclient import TestClient
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

from reme_core import hookimpl
from reme_core.errors import ConflictError, LlmError, StoreBusyError
from reme_core.pipelines.engine import PipelineError
from reme_core.runtime import Reme
from reme_core.server.app import create_app
from reme_core.server.auth import TokenStore
from reme_core.server.dispatch import run_operation
from reme_core.server.http_errors import status_for
from reme_core.server.principal import current_principal
from reme_core.server.workspaces import DEFAULT, ShuttingDownError, WorkspaceRegistry
from reme_core.service.operations import OPERATIONS
from reme_plugins.vector_local import LocalFileStore
from tests.server.api_support import (
    SHARED_NOTE,
    Served,
    make_workspaces,
    plugins,
    served,
    settings_for,
)

DEPLOY = "digest/procedure/deploy-process.md"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served(tmp_path_factory.mktemp("api")) as found:
        yield found


def error_of(response) -> dict:
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"type", "message"}, body
    return body["error"]


# -- schema -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_every_operation_is_a_typed_route(api: Served, name: str) -> None:
    schema = api.client.get("/openapi.json").json()
    route = schema["paths"][f"/api/v1/{name}"]["post"]
    assert route["operationId"] == name
    assert f"`{OPERATIONS[name].profile}` token" in route["description"]
    body = route["requestBody"]["content"]["application/json"]["schema"]
    refs = [body.get("$ref")] + [item.get("$ref") for item in body.get("anyOf", [])]
    expected = "SearchRequest" if name == "search" else OPERATIONS[name].input_model.__name__
    assert f"#/components/schemas/{expected}" in refs
    assert {"/health", "/status"} <= set(schema["paths"])


def test_health_needs_no_token_and_names_no_workspace(api: Served) -> None:
    response = api.client.get("/health")
    assert response.status_code == 200
    assert response.json()["status"] == "ok"
    assert "workspaces" not in response.json()


# -- operations ---------------------------------------------------------------------------------


def test_read_operations_match_the_workspace(api: Served) -> None:
    hits = api.post("search", {"query": "deploy rollback", "limit": 3}, token="read").json()
    assert hits["hits"] and len(hits["hits"]) <= 3
    assert {hit["workspace"] for hit in hits["hits"]} == {DEFAULT}
    assert hits["workspaces"] == [DEFAULT]
    assert hits["degraded"] == []  # keyword-only by configuration is not degraded

    text = (api.project / DEPLOY).read_text("utf-8")
    read = api.post("read", {"path": DEPLOY, "start_line": 2, "end_line": 3}, token="read")
    assert read.status_code == 200
    assert read.json()["content"] == "".join(text.splitlines(keepends=True)[1:3])
    assert read.json()["total_lines"] == len(text.splitlines())

    listing = api.post("list", {"path": "digest", "recursive": True}, token="read").json()
    assert DEPLOY in [entry["path"] for entry in listing["entries"]]
    stat = api.post("stat", {"path": DEPLOY}, token="read").json()
    assert stat["path"] == DEPLOY and len(stat["content_hash"]) == 64


def test_traverse_is_bounded(api: Served) -> None:
    walk = api.post("traverse", {"path": DEPLOY, "depth": 1, "max_nodes": 2}, token="read")
    assert walk.status_code == 200
    assert walk.json()["start"] == DEPLOY
    assert len(walk.json()["nodes"]) <= 2
    too_deep = api.post("traverse", {"path": DEPLOY, "depth": 9}, token="read")
    assert too_deep.status_code == 422
    assert "depth" in error_of(too_deep)["message"]


def test_write_edit_frontmatter_move_delete_round_trip(api: Served) -> None:
    path = "digest/wiki/api-roundtrip.md"
    content = "# Quokka\nquokka habitat\n"
    written = api.post("write", {"path": path, "content": content}, token="write")
    assert written.status_code == 200 and written.json()["created"] is True
    # Read-your-writes: searchable as soon as the call returns.
    found = api.post("search", {"query": "quokka"}, token="read").json()["hits"]
    assert [hit["path"] for hit in found] == [path]

    stale = api.post(
        "write", {"path": path, "content": "x\n", "expected_hash": "0" * 64}, token="write"
    )
    assert stale.status_code == 409 and error_of(stale)["type"] == "ConflictError"

    edited = api.post("edit", {"path": path, "old": "habitat", "new": "burrow"}, token="write")
    assert edited.status_code == 200
    missing = api.post("edit", {"path": path, "old": "absent text", "new": "x"}, token="write")
    assert missing.status_code == 409 and error_of(missing)["type"] == "EditError"
    front = api.post("frontmatter", {"path": path, "set": {"tags": ["animal"]}}, token="write")
    assert front.status_code == 200
    assert "tags:" in (api.project / path).read_text("utf-8")

    moved = api.post("move", {"src": path, "dst": "digest/wiki/quokka.md"}, token="admin")
    assert moved.status_code == 200
    assert not (api.project / path).exists()
    deleted = api.post("delete", {"path": "digest/wiki/quokka.md"}, token="admin")
    assert deleted.status_code == 200
    assert api.post("search", {"query": "quokka"}, token="read").json()["hits"] == []
    gone = api.post("read", {"path": "digest/wiki/quokka.md"}, token="read")
    assert gone.status_code == 404 and error_of(gone)["type"] == "NotFoundError"


def test_workspace_is_chosen_by_header_or_query(api: Served) -> None:
    by_header = api.post("read", {"path": SHARED_NOTE}, headers={"X-Reme-Workspace": "global"})
    assert by_header.status_code == 200 and "Tuesday" in by_header.json()["content"]
    by_query = api.post("read", {"path": SHARED_NOTE}, params={"workspace": "global"})
    assert by_query.status_code == 200
    # The default workspace has no such note: the choice really routed the call.
    assert api.post("read", {"path": SHARED_NOTE}).status_code == 404
    clash = api.post(
        "status", headers={"X-Reme-Workspace": "global"}, params={"workspace": DEFAULT}
    )
    assert clash.status_code == 400 and "disagree" in error_of(clash)["message"]
    unknown = api.post("status", headers={"X-Reme-Workspace": "nope"})
    assert unknown.status_code == 404 and "default, global" in error_of(unknown)["message"]


def test_search_can_include_the_shared_workspace(api: Served) -> None:
    body = {"query": "deploy tuesday checklist", "limit": 20}
    own = api.post("search", body, token="both_read").json()
    assert {hit["workspace"] for hit in own["hits"]} == {DEFAULT}

    both = api.post("search", {**body, "include_shared": True}, token="both_read").json()
    assert both["workspaces"] == [DEFAULT, "global"]
    shared_hits = [hit for hit in both["hits"] if hit["workspace"] == "global"]
    assert [hit["path"] for hit in shared_hits] == [SHARED_NOTE]
    scores = [hit["score"] for hit in both["hits"]]
    assert scores == sorted(scores, reverse=True)

    # A token for the project only gets the project only, however it asks.
    alone = api.post("search", {**body, "include_shared": True}, token="read").json()
    assert alone["workspaces"] == [DEFAULT]
    assert {hit["workspace"] for hit in alone["hits"]} == {DEFAULT}


def test_status_reports_index_runs_and_degradation(api: Served) -> None:
    assert api.post("reindex", token="admin").status_code == 200
    failed = api.post("dream", token="admin")  # no model configured
    assert failed.status_code == 503 and error_of(failed)["type"] == "ConfigError"

    status = api.client.get("/status", headers=api.headers("admin")).json()
    assert set(status["workspaces"]) == {DEFAULT, "global"}
    mine = status["workspaces"][DEFAULT]
    assert mine["files"] > 0 and mine["chunks"] > 0
    assert mine["vectors"]["state"] == "off"
    server = mine["server"]
    assert server["index"]["last_update"]["indexed"] > 0
    runs = [(run["operation"], run["ok"]) for run in server["last_runs"]]
    assert runs[:2] == [("dream", False), ("reindex", True)]
    assert "needs a model" in server["last_runs"][0]["error"]
    assert mine["degraded"] == server["degraded"] == []

    one = api.post("status", token="admin").json()
    assert one["workspace"] == str(api.project.resolve()) and "server" in one
    # Below admin, where the server keeps its files is hidden (tests/server/test_security.py).
    assert api.post("status", token="read").json()["workspace"] == "."


class BusyStore(LocalFileStore):
    name = "busy"

    def open(self, model_id: str, dim: int) -> None:
        raise StoreBusyError("another process holds the vector store")


class BusyStorePlugin:
    @hookimpl
    def register_file_stores(self, register):  # type: ignore[no-untyped-def]
        register(BusyStore)


def test_degraded_components_are_reported_in_status_and_every_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_watcher(self: Reme, on_report: object = None) -> None:
        raise OSError("inotify watch limit reached")

    monkeypatch.setattr(Reme, "watch", no_watcher)
    vectors = [*FAKE_VECTORS, "components.file_store.name=busy"]
    with served(tmp_path, *vectors, watch=True, manager=plugins(BusyStorePlugin())) as api:
        status = api.post("status", token="read").json()
        assert status["vectors"]["state"] == "unavailable"
        assert [line.split(":")[0] for line in status["degraded"]] == ["vectors", "watcher"]
        assert "keyword-only" in status["degraded"][0]
        assert "inotify" in status["degraded"][1]
        assert "inotify" in status["server"]["errors"][0]["error"]

        search = api.post("search", {"query": "deploy"}, token="read").json()
        assert search["arms"] == ["keyword"] and search["hits"]
        assert any("another process holds" in line for line in search["degraded"])
        assert any("inotify" in line for line in search["degraded"])


def test_a_healthy_vector_workspace_is_not_degraded(tmp_path: Path) -> None:
    with served(tmp_path, *FAKE_VECTORS) as api:
        vectors = api.registry.get(DEFAULT).vectors
        deadline = time.monotonic() + 30
        while vectors.building and time.monotonic() < deadline:  # embedding in the background
            time.sleep(0.01)
        status = api.post("status", token="read").json()
        assert status["vectors"]["state"] == "ready" and status["degraded"] == []
        search = api.post("search", {"query": "deploy"}, token="read").json()
        assert search["arms"] == ["keyword", "vector"] and search["degraded"] == []


def test_errors_are_json_with_a_type(api: Served) -> None:
    unknown = api.post("no_such_operation")
    assert unknown.status_code == 404 and error_of(unknown)["type"] == "NotFoundError"
    bad_json = api.client.post(
        "/api/v1/read",
        content=b"{not json",
        headers=api.headers("admin", **{"Content-Type": "application/json"}),
    )
    assert bad_json.status_code == 422 and "JSON" in error_of(bad_json)["message"]
    missing = api.post("read", {})
    assert missing.status_code == 422 and "path" in error_of(missing)["message"]


def test_shutdown_waits_for_a_running_call_and_refuses_new_ones(tmp_path: Path) -> None:
    project, shared = make_workspaces(tmp_path)
    registry = WorkspaceRegistry(settings_for(project, shared), plugins(), watch=False)
    inside, release, closed = threading.Event(), threading.Event(), threading.Event()

    def long_write() -> None:
        with registry.use(DEFAULT) as reme:
            inside.set()
            release.wait(10)
            reme.files.write("digest/wiki/late.md", "# Late\nwritten during shutdown\n")

    writer = threading.Thread(target=long_write)
    writer.start()
    assert inside.wait(10)
    closer = threading.Thread(target=lambda: (registry.close_all(), closed.set()))
    closer.start()
    assert not closed.wait(0.3)  # still waiting for the write
    with pytest.raises(ShuttingDownError, match="shutting down"), registry.use(DEFAULT):
        pass
    release.set()
    writer.join(10)
    assert closed.wait(10)
    assert (project / "digest/wiki/late.md").exists()

    # The write reached the persisted indexes: a fresh open finds it without indexing again.
    settings = settings_for(project, shared).model_copy(update={"workspace": project})
    with Reme(settings, plugins()) as reme:
        hits = reme.search("written during shutdown").hits
        assert [hit.path for hit in hits][:1] == ["digest/wiki/late.md"]


def test_runs_of_one_pipeline_are_serialised(api: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    overlapped = threading.Event()
    active: list[int] = []
    count = threading.Lock()

    def handler(reme: Reme, given: object) -> dict:
        with count:
            active.append(1)
            if len(active) > 1:
                overlapped.set()  # a second run got in while the first was still running
        overlapped.wait(0.3)
        with count:
            active.pop()
        return {"ok": True}

    slow = dataclasses.replace(OPERATIONS["auto_memory"], handler=handler)
    monkeypatch.setitem(OPERATIONS, "auto_memory", slow)
    body = {"session_id": "s1"}
    principal = api.store.verify(api.tokens["write"])
    assert principal is not None
    runs = [
        threading.Thread(
            target=run_operation, args=(api.registry, principal, DEFAULT, "auto_memory", body)
        )
        for _ in range(2)
    ]
    for run in runs:
        run.start()
    for run in runs:
        run.join(10)
    assert not overlapped.is_set()
    runs_recorded = api.registry.server_status(DEFAULT)["last_runs"]
    assert [r["operation"] for r in runs_recorded[:2]] == ["auto_memory", "auto_memory"]


def test_a_failed_pipeline_step_answers_with_its_cause_status() -> None:
    for cause, status in ((LlmError("timed out"), 503), (ConflictError("changed"), 409)):
        try:
            raise PipelineError("dream: step 'integrate' failed") from cause
        except PipelineError as exc:
            assert status_for(exc) == status
    assert status_for(PipelineError("unknown pipeline 'x'")) == 400
    assert status_for(RuntimeError("bug")) == 500


def test_mounted_mcp_app_lifespans_and_hooks(tmp_path: Path) -> None:
    """The contract the MCP and scheduler wiring relies on."""
    events: list[str] = []
    seen: list[tuple[str, str | None]] = []

    async def mcp_app(scope: Scope, receive: Receive, send: Send) -> None:
        principal = current_principal.get()
        seen.append((scope["path"], principal.profile if principal else None))
        await JSONResponse({"mcp": True})(scope, receive, send)

    @asynccontextmanager
    async def mcp_lifespan() -> AsyncIterator[None]:
        events.append("mcp up")
        yield
        events.append("mcp down")

    project, shared = make_workspaces(tmp_path)
    settings = settings_for(project, shared)
    registry = WorkspaceRegistry(settings, plugins(), watch=False)
    store = TokenStore(project / ".reme")
    _, secret = store.create("read", ["default"])
    app = create_app(
        settings,
        registry,
        store,
        mcp_app=mcp_app,
        lifespans=[mcp_lifespan],
        on_startup=[lambda: events.append("sync start"), _async_hook(events, "async start")],
        on_shutdown=[lambda: events.append("stop")],
    )
    try:
        with TestClient(app, base_url="http://127.0.0.1") as client:
            assert events == ["mcp up", "sync start", "async start"]
            assert client.post("/mcp", json={}).status_code == 401
            answer = client.post("/mcp", json={}, headers={"Authorization": f"Bearer {secret}"})
            assert answer.json() == {"mcp": True}
            assert client.get("/mcp", headers={"Origin": "http://evil.example"}).status_code == 403
        assert seen == [("/mcp", "read")]
        assert events[-2:] == ["stop", "mcp down"]
    finally:
        registry.close_all()


def _async_hook(events: list[str], name: str) -> Callable[[], Awaitable[None]]:
    async def hook() -> None:
        events.append(name)

    return hook


def test_shared_workspace_hits_clear_no_match(api: Served) -> None:
    # Only the shared workspace's note holds this word: the project alone finds nothing relevant,
    # project plus global does, and the merged response must say so.
    body = {"query": "tuesday", "limit": 5}
    own = api.post("search", body, token="both_read").json()
    both = api.post("search", {**body, "include_shared": True}, token="both_read").json()
    assert own["hits"] == [] and own["no_match"] is True
    assert [hit["path"] for hit in both["hits"]][:1] == [SHARED_NOTE]
    assert both["no_match"] is False
