"""The Claude Code plugin inside the real ``claude`` program, pinned, against a scripted model.

``integrations/claude_code/package.json`` pins ``@anthropic-ai/claude-code``; a session fixture
installs it with ``npm ci`` into ``$XDG_CACHE_HOME/reme/hosts/claude-code-<version>`` (else
``~/.cache/...``; reinstalled only when the lock file changes). Then
one scenario runs offline: ``reme serve`` on a one-note workspace (keyword search, no model) with
a write-profile token, a scripted Anthropic Messages server on 127.0.0.1 (scripted_anthropic.py),
and ``claude -p QUESTION --plugin-dir integrations/claude_code`` with a temporary HOME and
CLAUDE_CONFIG_DIR. The scripted model calls reme's search tool through the plugin's MCP entry,
then quotes what it returned; when the session ends the plugin's Stop/SessionEnd hook asks the
server to save it into ``sessions/`` and ``daily/``.

Without node and npm the test is skipped, unless REME_REQUIRE_HOSTS=1 (CI), where it fails.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from conftest import KEYWORD_ONLY_ENV

from reme_core.workspace import parse_frontmatter
from tests.integrations import hosts
from tests.integrations.scripted_anthropic import Script, ScriptedServer

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "integrations" / "claude_code"
PACKAGE = "@anthropic-ai/claude-code"
FACT = "The larkspur kiln key hangs behind the blue enamel door, tag 7Q-ORCHID."
TOKEN_OF_FACT = "7Q-ORCHID"
QUESTION = "Where does the larkspur kiln key hang?"
TOOL = "mcp__plugin_reme_reme__search"
"""Claude Code names a plugin's MCP tools mcp__plugin_<plugin>_<server in .mcp.json>__<tool>."""

CLAUDE_TIMEOUT_S = 180
CAPTURE_TIMEOUT_S = 30

OFFLINE_ENV = {
    # Documented switches that keep Claude Code from calling anything but ANTHROPIC_BASE_URL.
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_BUG_COMMAND": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY": "1",
    "ANTHROPIC_API_KEY": "sk-ant-scripted-dummy",
    "ANTHROPIC_MODEL": "claude-sonnet-4-5",
    "ANTHROPIC_SMALL_FAST_MODEL": "claude-haiku-4-5",
    "NO_PROXY": "127.0.0.1,localhost",
    # MCP tools are deferred behind ToolSearch by default; offer them directly, so that the
    # scripted model can call reme's search in its first turn.
    "ENABLE_TOOL_SEARCH": "false",
}


def clean_env(**extra: str) -> dict[str, str]:
    """The host environment without REME_*, CLAUDE_* or ANTHROPIC_* settings, plus ``extra``."""
    return hosts.clean_env(("CLAUDE_", "ANTHROPIC_"), **extra)


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    """The pinned ``claude``, installed with ``npm ci`` from the committed lock file."""
    home, version = hosts.npm_install(PLUGIN, PACKAGE, "claude-code")
    binary = home / "node_modules" / ".bin" / "claude"
    done = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and version in done.stdout, done.stdout + done.stderr
    return binary


class Served(NamedTuple):
    url: str
    token: str
    workspace: Path
    config_dir: Path
    home: Path
    tmp: Path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """``reme serve`` over a one-note workspace, sharing CLAUDE_CONFIG_DIR with the host (the
    server reads the transcript by session id from there)."""
    tmp = tmp_path_factory.mktemp("claude_host")
    workspace, home = hosts.one_note_workspace(tmp / "ws", FACT), tmp / "home"
    config_dir = home / ".claude"
    config_dir.mkdir(parents=True)
    env = clean_env(**KEYWORD_ONLY_ENV, REME_TIMEZONE="UTC", CLAUDE_CONFIG_DIR=str(config_dir))
    with hosts.reme_served(workspace, tmp / "server.log", env, "write") as (server, token):
        yield Served(server["url"], token, workspace, config_dir, home, tmp)


def daily_note(workspace: Path, session_id: str) -> Path | None:
    for path in sorted((workspace / "daily").glob("*/*.md")):
        front, _ = parse_frontmatter(path.read_text(encoding="utf-8"))
        if front.get("session_id") == session_id:
            return path
    return None


def wait_for(check: Callable[[], Any], timeout: float = CAPTURE_TIMEOUT_S) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def test_claude_recalls_from_reme_and_the_hook_saves_the_session(
    claude_bin: Path, served: Served
) -> None:
    script = Script(tool=TOOL, arguments={"query": "larkspur kiln key"})
    hook_log = served.tmp / "hook.log"
    with ScriptedServer(script) as model:
        env = clean_env(
            **OFFLINE_ENV,
            ANTHROPIC_BASE_URL=model.url,
            HOME=str(served.home),
            CLAUDE_CONFIG_DIR=str(served.config_dir),
            REME_URL=served.url,
            REME_TOKEN=served.token,
            REME_HOOK_LOG=str(hook_log),
        )
        started = time.monotonic()
        done = subprocess.run(
            [
                str(claude_bin),
                "-p",
                QUESTION,
                "--plugin-dir",
                str(PLUGIN),
                "--allowedTools",
                TOOL,
                "--output-format",
                "json",
            ],
            cwd=served.tmp,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=CLAUDE_TIMEOUT_S,
        )
        elapsed = time.monotonic() - started
    paths = [f"{r.method} {r.path}" for r in script.requests]
    context = f"claude took {elapsed:.1f}s, rc {done.returncode}\nrequests: {paths}\n"
    context += f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}"
    assert done.returncode == 0, context
    # The host called reme's tool over MCP with the token: its result reached the model.
    results = script.tool_results()
    assert results, f"no tool_result for {TOOL}\n{context}"
    assert TOKEN_OF_FACT in results[-1], f"tool_result without the fact: {results[-1]}\n{context}"
    # The final answer carries the recalled fact.
    output = json.loads(done.stdout)
    assert TOKEN_OF_FACT in output["result"], context
    session_id = output["session_id"]
    # Stop and SessionEnd ran the plugin's hook; it detached, so poll for what it wrote.
    saved = served.workspace / "sessions" / f"{session_id}.jsonl"
    note = wait_for(lambda: saved.is_file() and daily_note(served.workspace, session_id))
    logged = hook_log.read_text(encoding="utf-8") if hook_log.exists() else "(no hook log)"
    server_log = (served.tmp / "server.log").read_text(errors="replace")[-3000:]
    assert note, f"no capture for {session_id}\nhook log:\n{logged}\nserver:\n{server_log}"
    assert TOKEN_OF_FACT in saved.read_text(encoding="utf-8")
    text = note.read_text(encoding="utf-8")
    front, _ = parse_frontmatter(text)
    assert front.get("summarised") is False  # no model on the reme side: a verbatim excerpt
    assert front.get("source") == f"[[sessions/{session_id}.jsonl]]"  # the link back
    assert QUESTION in text and TOKEN_OF_FACT in text
    relative = note.relative_to(served.workspace).as_posix()
    assert wait_for(lambda: f"{session_id}: unsummarised {relative}" in hook_log.read_text()), (
        logged
    )
