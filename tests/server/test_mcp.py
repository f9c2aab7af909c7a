"""MCP tools through the SDK's own client: in-process, over streamable HTTP (uvicorn on a free
127.0.0.1 port, mounted at /mcp behind a stand-in auth middleware) and over stdio (`reme mcp`)."""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import uvicorn
from conftest import KEYWORD_ONLY_ENV, copy_example
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Route
from starlette.testclient import TestClient
from starlette.types import ASGIApp, Receive, Scope, Send

from reme_core.plugins import Plugins
from reme_core.runtime import Reme
from reme_core.server.mcp_server import build_mcp_app, build_mcp_server
from reme_core.server.principal import LOCAL_ADMIN, Principal, current_principal
from reme_core.service.operations import OPERATIONS

READ_TOOLS = {
    *("search", "read", "list", "stat", "traverse", "status", "health"),
    *("review_list", "review_show"),
    *("memory_get", "memory_list", "memory_retrieve"),
    *("links", "history", "history_show"),
    "proactive",
}
ALL_TOOLS = {*OPERATIONS, "health"}
DEPLOY = "digest/procedure/deploy-process.md"
READER = Principal(token_id="r", profile="read", workspaces=frozenset({"default"}))
WRITER = Principal(token_id="w", profile="write", workspaces=frozenset({"default"}))


@pytest.fixture
def reme(tmp_path: Path, default_plugins: Plugins) -> Iterator[Reme]:
    opened = Reme.open(copy_example(tmp_path / "ws"), plugins=default_plugins)
    opened.index(vectors="skip")
    yield opened
    opened.close()


def text(result: Any) -> str:
    return result.content[0].text


# -- in-process ------------------------------------------------------------------------------


def test_admin_lists_every_operation_with_its_annotations(reme: Reme) -> None:
    server = build_mcp_server(lambda _: reme, ["default"], fallback=LOCAL_ADMIN)

    async def scenario() -> list[Any]:
        async with Client(server) as client:
            return (await client.list_tools()).tools

    tools = {tool.name: tool for tool in anyio.run(scenario)}
    assert set(tools) == ALL_TOOLS and len(tools) == len(OPERATIONS) + 1  # + health
    for name, op in OPERATIONS.items():
        tool = tools[name]
        assert tool.description == op.summary
        assert tool.annotations.read_only_hint is op.read_only
        assert tool.annotations.destructive_hint is op.destructive
        assert tool.annotations.idempotent_hint is op.idempotent
        assert tool.input_schema["type"] == "object"
        # One served workspace: no workspace argument to get wrong.
        assert "workspace" not in tool.input_schema.get("properties", {})
    assert tools["search"].input_schema["required"] == ["query"]
    assert tools["delete"].annotations.destructive_hint is True
    assert tools["health"].annotations.read_only_hint is True


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_write_through_mcp_is_on_disk_and_searchable(reme: Reme, mode: str) -> None:
    server = build_mcp_server(lambda _: reme, ["default"], fallback=LOCAL_ADMIN)
    note = "digest/wiki/mcp-okapi.md"

    async def scenario() -> tuple[Any, Any, Any]:
        async with Client(server, mode=mode) as client:
            before = await client.call_tool("search", {"query": "deploy"})
            written = await client.call_tool(
                "write", {"path": note, "content": "# Okapi\n\nThe okapi migration runbook.\n"}
            )
            found = await client.call_tool("search", {"query": "okapi", "limit": 3})
            return before, written, found

    before, written, found = anyio.run(scenario)
    assert not before.is_error and before.structured_content["hits"]
    assert not written.is_error, text(written)
    assert written.structured_content["created"] is True
    assert json.loads(text(written)) == written.structured_content
    assert "okapi migration" in (reme.root / note).read_text()
    assert found.structured_content["hits"][0]["path"] == note


def test_failures_are_tool_errors_with_the_message(reme: Reme) -> None:
    server = build_mcp_server(lambda _: reme, ["default"], fallback=LOCAL_ADMIN)

    async def scenario() -> list[Any]:
        async with Client(server) as client:
            results = [
                await client.call_tool("search", {"query": ""}),
                await client.call_tool("read", {"path": DEPLOY, "allowed_paths": ["daily"]}),
                await client.call_tool("read", {"path": "../outside.md"}),
                await client.call_tool("read", {"path": "digest/missing.md"}),
            ]
            with pytest.raises(MCPError, match="unknown tool"):
                await client.call_tool("format_disk", {})
            # The connection survived every failure.
            results.append(await client.call_tool("read", {"path": DEPLOY}))
            return results

    empty, confined, escape, missing, fine = anyio.run(scenario)
    assert empty.is_error and "query" in text(empty)
    assert confined.is_error and "allowed_paths" in text(confined)
    assert escape.is_error and "PathOutsideWorkspaceError" in text(escape)
    assert missing.is_error and "NotFoundError" in text(missing)
    assert not fine.is_error and "deploy" in text(fine).lower()


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_read_principal_sees_only_read_tools_and_cannot_write_or_delete(
    reme: Reme, mode: str
) -> None:
    # fallback=LOCAL_ADMIN: the request's principal must win over it.
    server = build_mcp_server(lambda _: reme, ["default"], fallback=LOCAL_ADMIN)
    target = reme.root / DEPLOY
    before = target.read_bytes()

    async def scenario() -> tuple[set[str], Any, Any, Any, Any]:
        current_principal.set(READER)
        async with Client(server, mode=mode) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            # Called by name although never listed: still refused.
            write = await client.call_tool("write", {"path": "digest/new.md", "content": "x"})
            edit = await client.call_tool("edit", {"path": DEPLOY, "old": "deploy", "new": "x"})
            delete = await client.call_tool("delete", {"path": DEPLOY})
            search = await client.call_tool("search", {"query": "deploy"})
            return names, write, edit, delete, search

    names, write, edit, delete, search = anyio.run(scenario)
    assert names == READ_TOOLS
    for refused in (write, edit, delete):
        assert refused.is_error and "this token is read" in text(refused)
    assert not (reme.root / "digest/new.md").exists()
    assert target.read_bytes() == before
    assert not search.is_error


def test_write_principal_cannot_delete(reme: Reme) -> None:
    server = build_mcp_server(lambda _: reme, ["default"])

    async def scenario() -> tuple[set[str], Any]:
        current_principal.set(WRITER)
        async with Client(server) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            return names, await client.call_tool("delete", {"path": DEPLOY})

    names, delete = anyio.run(scenario)
    assert "write" in names and "delete" not in names and "move" not in names
    assert delete.is_error and "needs the admin profile" in text(delete)
    assert (reme.root / DEPLOY).exists()


def test_workspaces_follow_the_principal(
    reme: Reme, tmp_path: Path, default_plugins: Plugins
) -> None:
    team = Reme.open(copy_example(tmp_path / "team"), plugins=default_plugins)
    opened: list[str] = []

    def get_reme(name: str) -> Reme:
        opened.append(name)
        return {"default": reme, "team": team}[name]

    server = build_mcp_server(get_reme, ["default", "team"])
    note = {"path": "digest/wiki/team-note.md", "content": "# Team\n"}

    async def scenario() -> dict[str, Any]:
        current_principal.set(WRITER)  # may use "default" only
        async with Client(server) as client:
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
            out = {
                "schema": listed["write"].input_schema["properties"]["workspace"],
                "team": await client.call_tool("write", {**note, "workspace": "team"}),
                "unknown": await client.call_tool("status", {"workspace": "nope"}),
                "implicit": await client.call_tool("status", {}),
            }
        current_principal.set(LOCAL_ADMIN)
        async with Client(server) as client:
            out["admin"] = await client.call_tool("write", {**note, "workspace": "team"})
        return out

    try:
        out = anyio.run(scenario)
    finally:
        team.close()
    assert out["schema"]["enum"] == ["default"] and out["schema"]["default"] == "default"
    assert out["team"].is_error and "may not use workspace 'team'" in text(out["team"])
    assert out["unknown"].is_error and "unknown workspace 'nope'" in text(out["unknown"])
    assert out["implicit"].structured_content["workspace"] == str(reme.root)
    assert not out["admin"].is_error
    # The refused call never reached the team workspace; the admin's did.
    assert opened == ["default", "team"]
    assert (team.root / note["path"]).exists() and not (reme.root / note["path"]).exists()


def test_without_a_principal_nothing_is_listed_or_callable(reme: Reme) -> None:
    server = build_mcp_server(lambda _: reme, ["default"])  # no fallback: the HTTP default

    async def scenario() -> tuple[list[Any], Any]:
        async with Client(server) as client:
            tools = (await client.list_tools()).tools
            return tools, await client.call_tool("search", {"query": "deploy"})

    tools, search = anyio.run(scenario)
    assert tools == []
    assert search.is_error and "not authenticated" in text(search)


# -- streamable HTTP ---------------------------------------------------------------------------

TOKENS = {"admin-token": LOCAL_ADMIN, "read-token": READER}


class HeaderAuth:
    """Stands in for the server's auth middleware: sets current_principal from a header."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope.get("headers", []))
        token = current_principal.set(TOKENS.get(headers.get(b"x-token", b"").decode()))
        try:
            await self.app(scope, receive, send)
        finally:
            current_principal.reset(token)


@contextlib.contextmanager
def serving(app: ASGIApp) -> Iterator[str]:
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def test_streamable_http_under_mcp_filters_by_token(reme: Reme) -> None:
    mcp_app, mcp_lifespan = build_mcp_app(lambda _: reme, ["default"])

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with mcp_lifespan():
            yield

    app = Starlette(
        routes=[Route("/mcp", mcp_app)], middleware=[Middleware(HeaderAuth)], lifespan=lifespan
    )
    note = "digest/wiki/over-http.md"

    async def session(url: str, token: str, mode: str) -> dict[str, Any]:
        async with (
            httpx2.AsyncClient(headers={"x-token": token}) as http,
            Client(streamable_http_client(url, http_client=http), mode=mode) as client,
        ):
            return {
                "names": {tool.name for tool in (await client.list_tools()).tools},
                "write": await client.call_tool("write", {"path": note, "content": "# Kiwi\n"}),
                "search": await client.call_tool("search", {"query": "kiwi"}),
            }

    async def scenario(url: str) -> list[dict[str, Any]]:
        # The read token runs first, so its search finding nothing shows its write was refused.
        return [
            await session(url, "read-token", "legacy"),
            await session(url, "admin-token", "auto"),
            await session(url, "no-such-token", "auto"),
        ]

    with serving(app) as url:
        reader, admin, nobody = anyio.run(scenario, url)
    assert reader["names"] == READ_TOOLS
    assert reader["write"].is_error and "this token is read" in text(reader["write"])
    assert reader["search"].structured_content["hits"] == []
    assert admin["names"] == ALL_TOOLS
    assert not admin["write"].is_error, text(admin["write"])
    assert admin["search"].structured_content["hits"][0]["path"] == note
    assert (reme.root / note).read_text() == "# Kiwi\n"
    assert nobody["names"] == set()
    assert nobody["write"].is_error and "not authenticated" in text(nobody["write"])


def test_http_app_answers_503_outside_its_lifespan(reme: Reme) -> None:
    mcp_app, _ = build_mcp_app(lambda _: reme, ["default"])
    client = TestClient(Starlette(routes=[Route("/mcp", mcp_app)]))  # lifespan never entered
    response = client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert response.status_code == 503


# -- stdio ---------------------------------------------------------------------------------


def reme_command() -> list[str]:
    script = Path(sys.executable).with_name("reme")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from reme_core.cli import main; main()"]


def test_reme_mcp_serves_stdio(tmp_path: Path) -> None:
    root = copy_example(tmp_path / "ws")
    command, *args = reme_command()
    params = StdioServerParameters(
        command=command, args=[*args, "mcp", "-w", str(root)], env=dict(KEYWORD_ONLY_ENV)
    )

    async def scenario() -> tuple[set[str], Any]:
        async with Client(params, read_timeout_seconds=30) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            return names, await client.call_tool("search", {"query": "deploy"})

    names, search = anyio.run(scenario)
    # The spawned server is the owner: every tool, including delete.
    assert names == ALL_TOOLS
    assert not search.is_error and search.structured_content["hits"]
