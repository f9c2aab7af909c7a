"""`reme serve` as a real process on a free 127.0.0.1 port: discovery, token, one server per
workspace, graceful stop on SIGTERM with the indexes persisted."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from conftest import KEYWORD_ONLY_ENV, copy_example

from reme_core.errors import ConfigError
from reme_core.runtime import Reme
from reme_core.server.discovery import (
    DISCOVERY_FILE,
    Discovery,
    ServerLock,
    ServerRunningError,
    now,
    read_discovery,
    write_discovery,
)
from reme_core.server.serve import Server
from reme_core.settings import load_settings
from tests.server.api_support import plugins

NOTE = "digest/wiki/served-note.md"
MCP_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}


def reme_serve(workspace: Path) -> subprocess.Popen[str]:
    command = [sys.executable, "-c", "from reme_core.cli import main; main()"]
    args = ["serve", "-w", str(workspace), "--port", "0", "--log-level", "warning"]
    return subprocess.Popen(
        [*command, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **KEYWORD_ONLY_ENV},
    )


def wait_for_discovery(workspace: Path, process: subprocess.Popen[str]) -> str:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = read_discovery(workspace)
        if found is not None:
            return found.url
        if process.poll() is not None:
            pytest.fail(f"reme serve exited early: {process.communicate()}")
        time.sleep(0.05)
    process.kill()
    pytest.fail(f"no server.json after 30 s: {process.communicate()}")


@pytest.mark.slow
def test_serve_lifecycle(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    copy_example(workspace)
    first = reme_serve(workspace)
    try:
        url = wait_for_discovery(workspace, first)
        found = read_discovery(workspace)
        assert found is not None and found.pid == first.pid and found.workspace == "default"
        assert url.startswith("http://127.0.0.1:") and not url.endswith(":0")

        token_file = workspace / ".reme" / "token"
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        headers = {"Authorization": f"Bearer {token_file.read_text('utf-8').strip()}"}
        with httpx.Client(base_url=url, timeout=30) as http:
            assert http.get("/health").json()["status"] == "ok"
            assert http.post("/api/v1/status", json={}).status_code == 401
            written = http.post(
                "/api/v1/write",
                json={"path": NOTE, "content": "# Served\nwombat burrows persist\n"},
                headers=headers,
            )
            assert written.status_code == 200, written.text
            # MCP is mounted behind the same auth.
            assert http.post("/mcp", json=MCP_INITIALIZE).status_code == 401
            mcp = http.post(
                "/mcp",
                json=MCP_INITIALIZE,
                headers={**headers, "Accept": "application/json, text/event-stream"},
            )
            assert mcp.status_code == 200 and '"serverInfo"' in mcp.text, mcp.text

        second = reme_serve(workspace)
        out, err = second.communicate(timeout=30)
        assert second.returncode != 0, (out, err)
        assert f"already served by the server at {url}" in err

        first.send_signal(signal.SIGTERM)
        out, err = first.communicate(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate()
    assert first.returncode == 0, err
    assert 'export REME_TOKEN="$(cat' in err and "reme server stopped" in err
    assert not (workspace / ".reme" / DISCOVERY_FILE).exists()
    assert read_discovery(workspace) is None

    # The write was persisted on shutdown: searchable on a fresh open, before any index pass.
    settings = load_settings(overrides=[f"workspace={workspace}"], env=KEYWORD_ONLY_ENV)
    with Reme(settings, plugins()) as reme:
        assert [hit.path for hit in reme.search("wombat burrows").hits][:1] == [NOTE]


def test_one_server_per_workspace_across_all_served_folders(tmp_path: Path) -> None:
    project, notes, other = tmp_path / "project", tmp_path / "notes", tmp_path / "other"
    for folder in (project, notes, other):
        folder.mkdir()
    first = ServerLock({"default": project, "notes": notes})
    first.acquire()
    try:
        info = Discovery(
            url="http://127.0.0.1:4321",
            pid=os.getpid(),
            started=now(),
            workspace="notes",
            workspaces=["default", "notes"],
            auth=True,
        )
        write_discovery(notes, info)
        assert read_discovery(notes) == info
        # A server started on `notes` itself is refused, naming the one that serves it.
        with pytest.raises(ServerRunningError, match=r"already served by .*4321"):
            ServerLock({"default": notes}).acquire()
        with pytest.raises(ServerRunningError, match="still starting"):
            ServerLock({"default": other, "x": project}).acquire()
    finally:
        first.release()
    # A server.json left behind by a server that is gone is not believed.
    assert (notes / ".reme" / DISCOVERY_FILE).exists()
    assert read_discovery(notes) is None
    again = ServerLock({"default": notes, "other": other})
    again.acquire()  # the refused attempt above released what it had taken
    again.release()


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["server.workspaces.default={other}"], "workspace name"),
        (["server.workspaces.bad/name={other}"], "workspace name"),
        (["server.workspaces.notes={missing}"], "is not a folder"),
        (["server.workspaces.notes={ws}"], "already served as 'default'"),
        (["server.shared_workspaces=[global]"], "'global' not served"),
    ],
)
def test_bad_workspace_config_refuses_to_start(
    tmp_path: Path, overrides: list[str], message: str
) -> None:
    ws, other = tmp_path / "ws", tmp_path / "other"
    ws.mkdir()
    other.mkdir()
    given = [o.format(ws=ws, other=other, missing=tmp_path / "missing") for o in overrides]
    settings = load_settings(overrides=[f"workspace={ws}", *given], env=KEYWORD_ONLY_ENV)
    with pytest.raises(ConfigError, match=message):
        Server(settings, plugins=plugins())
    assert not (ws / ".reme").exists()


def test_stop_from_another_thread_shuts_down_cleanly(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    copy_example(workspace)
    settings = load_settings(
        overrides=[f"workspace={workspace}", "server.port=0", "server.auth=false"],
        env=KEYWORD_ONLY_ENV,
    )
    messages: list[str] = []
    server = Server(settings, plugins=plugins(), echo=messages.append, log_level="warning")
    thread = threading.Thread(target=server.run)
    thread.start()
    try:
        assert server.ready.wait(30), messages
        assert server.url is not None
        with httpx.Client(base_url=server.url, timeout=30) as http:
            # Auth off (loopback only): the local owner, no token needed.
            assert http.post("/api/v1/status", json={}).json()["files"] > 0
        assert any("auth is off" in line for line in messages)
    finally:
        server.stop()
        thread.join(30)
    assert not thread.is_alive()
    assert read_discovery(workspace) is None
    assert not (workspace / ".reme" / DISCOVERY_FILE).exists()
    assert messages[-1] == "reme server stopped"
