"""What the real-Claude-Code tests share (test_claude_code_host.py): the pinned host's paths, an
offline environment, one ``claude -p`` run against the scripted model with its debug log, and
readers for what the capture left in the workspace."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from reme_core.workspace import parse_frontmatter
from tests.integrations import hosts
from tests.integrations.scripted_anthropic import Script, ScriptedServer

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "integrations" / "claude_code"
HOST_PIN = PLUGIN / "host"
"""package.json + lock of the tested Claude Code: not in the plugin's root, where Claude Code's
installer would run ``npm ci`` on them."""
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


class Served(NamedTuple):
    url: str
    token: str
    read_token: str
    workspace: Path
    config_dir: Path
    home: Path
    tmp: Path


def host_env(served: Served, model_url: str, **extra: str) -> dict[str, str]:
    return clean_env(
        **OFFLINE_ENV,
        ANTHROPIC_BASE_URL=model_url,
        HOME=str(served.home),
        CLAUDE_CONFIG_DIR=str(served.config_dir),
        **extra,
    )


def claude(
    binary: Path, args: list[str], cwd: Path, env: dict[str, str]
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(binary), *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=CLAUDE_TIMEOUT_S,
    )


@dataclass
class Turn:
    """One ``claude -p`` run: its output, what the model saw, the logs it left."""

    done: subprocess.CompletedProcess
    script: Script
    debug: str
    """Claude Code's own debug log of the run (``--debug-file``): hook stdout and stderr."""
    elapsed: float

    @property
    def output(self) -> dict[str, Any]:
        return json.loads(self.done.stdout)

    def context(self) -> str:
        paths = [f"{r.method} {r.path}" for r in self.script.requests]
        return (
            f"claude took {self.elapsed:.1f}s, rc {self.done.returncode}\nrequests: {paths}\n"
            f"stdout:\n{self.done.stdout[-3000:]}\nstderr:\n{self.done.stderr[-3000:]}"
        )


def ask(
    binary: Path,
    served: Served,
    cwd: Path,
    prompt: str,
    *,
    tool: str = TOOL,
    arguments: dict[str, Any] | None = None,
    resume: str | None = None,
    **env: str,
) -> Turn:
    """``claude -p prompt`` in ``cwd`` (resuming ``resume``), with the scripted model calling
    ``tool`` (with ``arguments``, else reme's search for the fact); ``env`` adds or overrides
    variables (REME_URL, REME_TOKEN, REME_HOOK_LOG)."""
    script = Script(tool=tool, arguments=arguments or {"query": "larkspur kiln key"})
    debug = served.tmp / f"debug-{time.monotonic_ns()}.txt"
    args = ["-p", prompt, "--allowedTools", tool, "--output-format", "json"]
    args += ["--debug-file", str(debug)] + (["--resume", resume] if resume else [])
    # The hook waits 0.5 s for its call's outcome by default; a loaded CI machine can take longer
    # to answer even a refused call, and the test reads the line the hook tells Claude Code.
    env = {"REME_HOOK_WAIT_S": "5", **env}
    with ScriptedServer(script) as model:
        started = time.monotonic()
        done = claude(binary, args, cwd, host_env(served, model.url, **env))
        elapsed = time.monotonic() - started
    text = debug.read_text(encoding="utf-8", errors="replace") if debug.exists() else ""
    return Turn(done, script, text, elapsed)


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


def saved_turns(served: Served, session_id: str) -> list[dict[str, Any]]:
    path = served.workspace / "sessions" / f"{session_id}.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def turn_count(served: Served, session_id: str, count: int) -> bool:
    """The saved transcript has ``count`` turns and its cursor covers them all (the hook's
    call has finished)."""
    cursor = served.workspace / ".reme" / "auto_memory" / "sessions" / f"{session_id}.json"
    if len(saved_turns(served, session_id)) != count or not cursor.is_file():
        return False
    return json.loads(cursor.read_text(encoding="utf-8")).get("line") == count


def logs(served: Served, hook_log: Path) -> str:
    logged = hook_log.read_text(encoding="utf-8") if hook_log.exists() else "(no hook log)"
    server = (served.tmp / "server.log").read_text(errors="replace")[-3000:]
    return f"hook log:\n{logged}\nserver:\n{server}"


def closed_port_url() -> str:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


def run_hook(session_id: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    stdin = json.dumps({"session_id": session_id, "hook_event_name": "Stop"})
    hook = PLUGIN / "hooks" / "reme_stop_hook.py"
    return subprocess.run(
        ["python3", str(hook)], input=stdin, env=env, capture_output=True, text=True, timeout=30
    )


def is_answer(raw: bytes) -> bool:
    """Whether a line of Claude Code's transcript is an assistant line with text in it."""
    try:
        line = json.loads(raw)
    except ValueError:
        return False  # the fault test writes a line that is not JSON
    if not isinstance(line, dict) or line.get("type") != "assistant":
        return False
    message = line.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return False
    return any(isinstance(b, dict) and b.get("type") == "text" for b in content)
