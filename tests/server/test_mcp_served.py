"""The SDK's MCP client against a real `reme serve` (its auth, profiles and dispatcher)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from conftest import copy_example
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from reme_core.server.auth import TokenStore
from tests.server.api_support import running_server

NOTE = "digest/wiki/served-over-mcp.md"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    workspace = tmp_path_factory.mktemp("mcp-served") / "ws"
    copy_example(workspace)
    with running_server(workspace) as server:
        yield workspace, server.url


def session(url: str, token: str) -> dict[str, Any]:
    async def scenario() -> dict[str, Any]:
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            httpx2.AsyncClient(headers=headers) as http,
            Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
        ):
            return {
                "tools": {tool.name for tool in (await client.list_tools()).tools},
                "write": await client.call_tool(
                    "write", {"path": NOTE, "content": "# Served\n\nnarwhal migration\n"}
                ),
                "search": await client.call_tool("search", {"query": "narwhal"}),
                "delete": await client.call_tool("delete", {"path": NOTE}),
            }

    return anyio.run(scenario)


def test_a_read_token_sees_read_tools_and_cannot_write_or_delete(served: tuple[Path, str]):
    workspace, url = served
    _, secret = TokenStore(workspace / ".reme").create("read", ["default"])
    reader = session(url, secret)
    assert reader["tools"] == {
        *("search", "read", "list", "stat", "traverse", "status", "health"),
        *("memory_get", "memory_list", "memory_retrieve"),
        *("links", "history", "history_show"),
        *("review_list", "review_show"),
        "proactive",
    }
    assert reader["write"].is_error and reader["delete"].is_error
    assert not (workspace / NOTE).exists()
    assert reader["search"].structured_content["hits"] == []


def test_a_write_token_writes_and_searches_but_cannot_delete(served: tuple[Path, str]):
    workspace, url = served
    _, secret = TokenStore(workspace / ".reme").create("write", ["default"])
    writer = session(url, secret)
    assert "write" in writer["tools"] and "delete" not in writer["tools"]
    assert not writer["write"].is_error
    assert writer["search"].structured_content["hits"][0]["path"] == NOTE
    assert writer["delete"].is_error and (workspace / NOTE).is_file()
