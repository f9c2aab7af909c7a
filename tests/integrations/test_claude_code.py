"""The Claude Code plugin: its config files, and its Stop hook against a real ``reme serve``.

The server runs as a subprocess on a free port over a temporary workspace, keyword search only
and no model (the daily note is then a verbatim excerpt), with CLAUDE_CONFIG_DIR pointing at a
copy of the sample Claude Code transcript. The hook runs as Claude Code runs it: a fresh Python
with the hook JSON on stdin, here with ``-S`` so that it cannot import anything installed.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from conftest import KEYWORD_ONLY_ENV

from reme_core.workspace import init_workspace, parse_frontmatter

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "integrations" / "claude_code"
HOOK = PLUGIN / "hooks" / "reme_stop_hook.py"
EXAMPLE = ROOT / "examples" / "auto_memory" / "claude"
SID = "7b1f3c2a-5d4e-4f60-9a8b-0c1d2e3f4a5b"
PROJECT = "-home-mira-larkspur"
OTHER_SID = "0c0ffee0-1111-4222-8333-444455556666"
"""A second session (a copy of the sample) for the discovery path."""

START_TIMEOUT_S = 30
NOTE_TIMEOUT_S = 10
HOOK_RETURNS_WITHIN_S = 2.0
"""The hook waits at most 0.5 s for the outcome; the rest is a Python start on a loaded machine."""


class Served(NamedTuple):
    url: str
    token: str
    workspace: Path
    tmp: Path


def reme_command() -> list[str]:
    script = Path(sys.executable).with_name("reme")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from reme_core.cli import main; main()"]


def clean_env(**extra: str) -> dict[str, str]:
    """The host environment without REME_* or CLAUDE_* settings, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REME_", "CLAUDE_"))}
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("claude_code")
    workspace = tmp / "ws"
    init_workspace(workspace)
    claude = tmp / "claude"
    shutil.copytree(EXAMPLE, claude)
    transcript = claude / "projects" / PROJECT / f"{SID}.jsonl"
    shutil.copy(transcript, transcript.with_name(f"{OTHER_SID}.jsonl"))
    env = clean_env(**KEYWORD_ONLY_ENV, REME_TIMEZONE="UTC", CLAUDE_CONFIG_DIR=str(claude))
    log = open(tmp / "server.log", "wb")  # noqa: SIM115 (closed at teardown)
    proc = subprocess.Popen(
        [*reme_command(), "serve", "-w", str(workspace), "--port", "0", "--log-level", "warning"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        discovery = workspace / ".reme" / "server.json"
        deadline = time.monotonic() + START_TIMEOUT_S
        while not discovery.is_file():
            output = (tmp / "server.log").read_text(errors="replace")
            assert proc.poll() is None, f"reme serve exited:\n{output}"
            assert time.monotonic() < deadline, f"reme serve did not start:\n{output}"
            time.sleep(0.05)
        url = json.loads(discovery.read_text(encoding="utf-8"))["url"]
        token = (workspace / ".reme" / "token").read_text(encoding="utf-8").strip()
        yield Served(url, token, workspace, tmp)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def run_hook(stdin: bytes, env: dict[str, str]) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-S", str(HOOK)], input=stdin, env=env, capture_output=True, timeout=10
    )
    return done, time.monotonic() - started


def hook_input(session_id: Any, tmp: Path) -> bytes:
    return json.dumps(
        {
            "session_id": session_id,
            "transcript_path": str(tmp / "claude" / "projects" / PROJECT / f"{session_id}.jsonl"),
            "cwd": "/home/mira/larkspur",
            "hook_event_name": "Stop",
            "stop_hook_active": False,
        }
    ).encode()


def wait_for(check: Any, timeout: float = NOTE_TIMEOUT_S) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def daily_note(workspace: Path, session_id: str) -> Path | None:
    for path in sorted((workspace / "daily").glob("*/*.md")):
        front, _ = parse_frontmatter(path.read_text(encoding="utf-8"))
        if front.get("session_id") == session_id:
            return path
    return None


def assert_saved(served: Served, session_id: str, log: Path) -> None:
    saved = served.workspace / "sessions" / f"{session_id}.jsonl"
    note = wait_for(lambda: saved.is_file() and daily_note(served.workspace, session_id))
    hook_log = log.read_text(encoding="utf-8") if log.exists() else "(no hook log)"
    assert note, f"no daily note or transcript for {session_id}; hook log:\n{hook_log}"
    assert note.parent.name == "2026-11-02"  # the transcript's day (UTC)
    assert "orjson" in note.read_text(encoding="utf-8")
    # The background call logs its outcome: the note it wrote, not an error.
    # (no model here, so the status is "unsummarised"; with one it is "written")
    logged = re.compile(
        rf"{session_id}: \w+ {re.escape(note.relative_to(served.workspace).as_posix())}"
    )
    assert wait_for(lambda: log.is_file() and logged.search(log.read_text(encoding="utf-8")))


# -- the hook against the server -------------------------------------------------------------


def test_stop_hook_saves_the_session_into_a_daily_note(served: Served):
    log = served.tmp / "hook.log"
    env = clean_env(REME_URL=served.url, REME_TOKEN=served.token, REME_HOOK_LOG=str(log))
    done, elapsed = run_hook(hook_input(SID, served.tmp), env)
    assert done.returncode == 0 and done.stdout == b""  # no systemMessage: nothing went wrong
    # The outcome, when it came within the hook's wait, is one line for Claude Code's log.
    assert done.stderr == b"" or done.stderr.decode().startswith(f"reme: {SID}: "), done.stderr
    assert elapsed < HOOK_RETURNS_WITHIN_S  # it detaches; the pipeline runs after it returned
    assert_saved(served, SID, log)


def test_stop_hook_finds_the_server_from_the_workspace_folder(served: Served):
    # No URL or token given: both come from .reme/server.json, as for the reme CLI.
    log = served.tmp / "hook-discovery.log"
    env = clean_env(REME_WORKSPACE=str(served.workspace), REME_HOOK_LOG=str(log))
    done, elapsed = run_hook(hook_input(OTHER_SID, served.tmp), env)
    assert done.returncode == 0 and elapsed < HOOK_RETURNS_WITHIN_S
    assert_saved(served, OTHER_SID, log)


def test_an_image_left_out_is_named_in_the_hook_log_and_its_turn_saved(served: Served):
    sid, log = "1c0ffee0-1111-4222-8333-444455556666", served.tmp / "hook-image.log"
    lying = {"type": "base64", "media_type": "image/png", "data": "R0lGODlhAQABAAAAACw="}
    result = [
        {
            "type": "tool_result",
            "tool_use_id": "t1",
            "content": [{"type": "image", "source": lying}],
        }
    ]  # a gif's bytes, named a png
    lines = [("u1", "user", "Open the chart"), ("u2", "user", result)]
    with open(served.tmp / "claude" / "projects" / PROJECT / f"{sid}.jsonl", "w") as fh:
        for uuid, kind, content in lines:
            message = {"role": kind, "content": content}
            fh.write(json.dumps({"type": kind, "uuid": uuid, "message": message}) + "\n")
    env = clean_env(REME_URL=served.url, REME_TOKEN=served.token, REME_HOOK_LOG=str(log))
    done, _ = run_hook(hook_input(sid, served.tmp), env)
    assert done.returncode == 0
    found = "; 1 image(s) not kept (turn u2: the bytes are not image/png)"
    assert wait_for(lambda: log.is_file() and found in log.read_text(encoding="utf-8"))
    saved = (served.workspace / "sessions" / f"{sid}.jsonl").read_text(encoding="utf-8")
    assert [json.loads(t)["role"] for t in saved.splitlines()] == ["user", "tool"]


def test_mcp_json_reaches_the_server(served: Served):
    # Expand .mcp.json the way Claude Code does (${VAR} and ${VAR:-default}), then initialize.
    env = {"REME_URL": served.url, "REME_TOKEN": served.token}
    entry = json.loads((PLUGIN / ".mcp.json").read_text())["mcpServers"]["reme"]

    def expand(text: str) -> str:
        pattern = r"\$\{(\w+)(?::-([^}]*))?\}"
        return re.sub(pattern, lambda m: env.get(m[1]) or m[2] or "", text)

    request = urllib.request.Request(
        expand(entry["url"]),
        data=json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "test", "version": "0"},
                },
            }
        ).encode(),
        headers={
            **{k: expand(v) for k, v in entry["headers"].items()},
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        },
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=10) as response:
        body = response.read().decode()
    assert response.status == 200 and '"serverInfo"' in body and "reme" in body


# -- the hook never gets in the agent's way --------------------------------------------------


@pytest.mark.parametrize(
    "stdin",
    [
        b"",
        b"not json",
        b"[1, 2]",
        b'{"hook_event_name": "Stop"}',
        b'{"session_id": 42}',
        b'{"session_id": "../../etc/passwd"}',
        b"\xff\xfe",
    ],
)
def test_bad_input_exits_0_at_once(stdin: bytes, tmp_path: Path):
    log = tmp_path / "hook.log"
    done, elapsed = run_hook(stdin, clean_env(REME_HOOK_LOG=str(log)))
    assert done.returncode == 0 and elapsed < HOOK_RETURNS_WITHIN_S
    assert "no usable session_id" in log.read_text(encoding="utf-8")
    told_the_host(done, "no usable session_id")


def told_the_host(done: subprocess.CompletedProcess, words: str) -> None:
    """One ``reme:`` line on stderr (Claude Code's debug log) and the same line as the
    ``systemMessage`` Claude Code shows the user."""
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("reme: ") and words in lines[0], lines
    assert json.loads(done.stdout) == {"systemMessage": lines[0]}


def test_a_stdin_that_never_closes_does_not_block(tmp_path: Path):
    env = clean_env(REME_HOOK_LOG=str(tmp_path / "hook.log"))
    proc = subprocess.Popen(
        [sys.executable, "-S", str(HOOK)], stdin=subprocess.PIPE, env=env, stderr=subprocess.PIPE
    )
    try:
        assert proc.stdin is not None
        proc.stdin.write(b'{"session_id": "abc')
        proc.stdin.flush()
        assert proc.wait(timeout=3) == 0  # gave up waiting for the rest after half a second
    finally:
        proc.kill()
        proc.wait()


def test_the_hook_returns_while_its_call_is_still_running(tmp_path: Path):
    # A server that accepts the call and does not answer until the hook has long returned.
    log = tmp_path / "hook.log"
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(5)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        env = clean_env(REME_URL=url, REME_TOKEN="s3cret", REME_HOOK_LOG=str(log))
        done, elapsed = run_hook(b'{"session_id": "s1", "hook_event_name": "Stop"}', env)
        assert done.returncode == 0 and elapsed < HOOK_RETURNS_WITHIN_S
        conn, _ = listener.accept()  # the detached process calls after the hook exited
        with conn:
            conn.settimeout(5)
            head, body = read_request(conn)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
    assert head.startswith(b"POST /api/v1/auto_memory_cc HTTP/1.1\r\n")
    assert b"\r\nAuthorization: Bearer s3cret\r\n" in head
    assert json.loads(body) == {"session_id": "s1"}
    assert wait_for(lambda: log.is_file() and "s1: done" in log.read_text(encoding="utf-8"))


def read_request(conn: socket.socket) -> tuple[bytes, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        data += conn.recv(4096)
    head, body = data.split(b"\r\n\r\n", 1)
    length = int(re.search(rb"Content-Length: (\d+)", head, re.IGNORECASE)[1])
    while len(body) < length:
        body += conn.recv(4096)
    return head, body


def test_an_unreachable_server_is_logged_not_raised(tmp_path: Path):
    log = tmp_path / "hook.log"
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    env = clean_env(REME_URL=url, REME_TOKEN="t", REME_HOOK_LOG=str(log))
    done, elapsed = run_hook(b'{"session_id": "abc"}', env)
    assert done.returncode == 0 and elapsed < HOOK_RETURNS_WITHIN_S
    told_the_host(done, f"abc: not saved, cannot call {url}")
    logged = wait_for(lambda: log.is_file() and "cannot call" in log.read_text(encoding="utf-8"))
    assert logged, log.read_text(encoding="utf-8") if log.exists() else "no log"


# -- the plugin files ------------------------------------------------------------------------


def test_plugin_manifest_hooks_and_mcp_config():
    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == "reme" and manifest["description"]
    market = json.loads((PLUGIN / ".claude-plugin" / "marketplace.json").read_text())
    assert [p["name"] for p in market["plugins"]] == ["reme"]

    hooks = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]
    (command,) = [h["command"] for group in hooks["Stop"] for h in group["hooks"]]
    assert command == 'python3 "${CLAUDE_PLUGIN_ROOT}/hooks/reme_stop_hook.py"'

    entry = json.loads((PLUGIN / ".mcp.json").read_text())["mcpServers"]["reme"]
    assert entry["type"] == "http"
    assert entry["url"] == "${REME_URL:-http://127.0.0.1:2333}/mcp"
    assert entry["headers"] == {"Authorization": "Bearer ${REME_TOKEN}"}  # no secret in the file


def test_recall_skill_teaches_search_read_traverse_and_citing():
    text = (PLUGIN / "skills" / "recall" / "SKILL.md").read_text(encoding="utf-8")
    front, _ = parse_frontmatter(text)
    body = text.split("\n---\n", 1)[1]
    assert front["name"] == "recall" and len(front["description"]) > 50
    for tool in ("`search`", "`read`", "`traverse`"):
        assert tool in body
    assert "cite" in body.lower() and "nothing is found" in body.lower()


def test_hook_imports_only_the_standard_library():
    tree = ast.parse(HOOK.read_text(encoding="utf-8"))
    modules = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    modules |= {
        node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
    }
    roots = {name.split(".")[0] for name in modules} - {"__future__"}
    assert roots <= sys.stdlib_module_names, roots - sys.stdlib_module_names
