"""Recall from reme inside the real ``codex`` program, pinned, against a scripted model.

``integrations/codex/package.json`` pins ``@openai/codex``; a session fixture installs it with
``npm ci`` into ``$XDG_CACHE_HOME/reme/hosts/codex-<version>`` (else ``~/.cache/...``;
reinstalled only when the lock file changes). Then one scenario runs offline: ``reme serve`` on a
one-note workspace (keyword search, no model) with a read-profile token, a scripted OpenAI
Responses server on 127.0.0.1 (scripted_openai_responses.py), and ``codex exec QUESTION`` with a
temporary CODEX_HOME whose config.toml names the scripted server as the model provider and reme
as a streamable-HTTP MCP server (bearer token from $REME_TOKEN, as integrations/codex/README.md
tells users). The scripted model calls reme's search tool, then quotes what it returned.

Capture runs as a user sets it up: ``reme integrate codex`` writes the reme MCP entry and the
notify program into the temporary CODEX_HOME (the token into its .env, which codex loads), a
``reme serve`` with a write token's store reads that CODEX_HOME, and after ``codex exec`` the
notify program's call has saved the session under ``sessions/`` with a ``daily/`` note linking
back; ``codex exec resume`` adds one more turn, and only its lines are captured. Faults: three
sessions whose capture meets reme down, a wrong token and a read-only token each log one line in
the notify log while codex answers, and the next session's capture saves all of them. Without node
and npm the tests are skipped, unless REME_REQUIRE_HOSTS=1 (CI), where they fail.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest
from conftest import KEYWORD_ONLY_ENV

from tests.integrations import hosts
from tests.integrations.scripted_openai_responses import Script, ScriptedServer

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
INTEGRATION = ROOT / "integrations" / "codex"
PACKAGE = "@openai/codex"
FACT = "The larkspur kiln key hangs behind the blue enamel door, tag 7Q-ORCHID."
TOKEN_OF_FACT = "7Q-ORCHID"
QUESTION = "Where does the larkspur kiln key hang?"
NAMESPACE, TOOL = "mcp__reme", "search"
"""Codex offers an MCP server's tools as one namespace tool ``mcp__<server>``; a call names the
namespace and the tool."""
AGENTS_MARKER = "## Memory (reme)"

CODEX_TIMEOUT_S = 180

CONFIG = """\
model = "gpt-scripted"
model_provider = "scripted"
approval_policy = "never"
sandbox_mode = "read-only"
# Offline: no update check, no analytics, feedback or OpenTelemetry export.
check_for_update_on_startup = false

[features]
# The plugin catalogue syncs from github.com and chatgpt.com at start; apps reach ChatGPT.
plugins = false
remote_plugin = false
apps = false
in_app_updates = false

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"

[model_providers.scripted]
name = "scripted"
base_url = "{model_url}/v1"
wire_api = "responses"
env_key = "SCRIPTED_API_KEY"

"""
"""Everything but reme: the offline settings and the scripted model provider."""
MCP = """
[mcp_servers.reme]
url = "{reme_url}/mcp"
bearer_token_env_var = "REME_TOKEN"
"""


def clean_env(**extra: str) -> dict[str, str]:
    """The host environment without REME_*, CODEX_* or OPENAI_* settings, plus ``extra``."""
    return hosts.clean_env(("CODEX_", "OPENAI_"), **extra)


@pytest.fixture(scope="session")
def codex_bin() -> Path:
    """The pinned ``codex``, installed with ``npm ci`` from the committed lock file."""
    home, version = hosts.npm_install(INTEGRATION, PACKAGE, "codex")
    binary = home / "node_modules" / ".bin" / "codex"
    # Any codex run writes under CODEX_HOME (default ~/.codex): keep it out of the user's home.
    scratch = home / "codex_home"
    scratch.mkdir(exist_ok=True)
    done = subprocess.run(
        [str(binary), "--version"],
        env=clean_env(CODEX_HOME=str(scratch)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and version in done.stdout, done.stdout + done.stderr
    return binary


class Served(NamedTuple):
    url: str
    token: str
    workspace: Path
    tmp: Path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """``reme serve`` over a one-note workspace, with a read-profile token for the host."""
    tmp = tmp_path_factory.mktemp("codex_host")
    workspace = hosts.one_note_workspace(tmp / "ws", FACT)
    env = clean_env(**KEYWORD_ONLY_ENV, REME_TIMEZONE="UTC")
    with hosts.reme_served(workspace, tmp / "server.log", env, "read") as (server, token):
        assert server["auth"] is True  # so a tool result proves the host sent the token
        yield Served(server["url"], token, workspace, tmp)


def run_codex(codex: Path, served: Served, model_url: str, token: str) -> tuple[Path, str, str]:
    """``codex exec QUESTION`` in a project folder holding our AGENTS.md, which must exit 0;
    (run folder, codex's stderr, context for failure messages)."""
    run = served.tmp / f"run-{time.monotonic_ns()}"
    codex_home, project = run / "codex_home", run / "project"
    codex_home.mkdir(parents=True)
    project.mkdir()
    shutil.copy(INTEGRATION / "AGENTS.md", project / "AGENTS.md")
    config = CONFIG.format(model_url=model_url) + MCP.format(reme_url=served.url)
    (codex_home / "config.toml").write_text(config, encoding="utf-8")
    env = codex_env(codex_home, run, REME_TOKEN=token)
    done, context = codex_exec(codex, project, env, run / "last_message.txt", QUESTION)
    return run, done.stderr, context


def codex_env(codex_home: Path, home: Path, **extra: str) -> dict[str, str]:
    return clean_env(
        CODEX_HOME=str(codex_home),
        HOME=str(home),
        SCRIPTED_API_KEY="sk-scripted-dummy",
        NO_PROXY="127.0.0.1,localhost",
        RUST_LOG="warn",
        **extra,
    )


def codex_exec(
    codex: Path, project: Path, env: dict[str, str], last: Path, *args: str
) -> tuple[subprocess.CompletedProcess[str], str]:
    """``codex exec [ARGS]``, which must exit 0; (the run, context for failure messages)."""
    started = time.monotonic()
    done = subprocess.run(
        [
            str(codex),
            "exec",
            "--strict-config",  # a config key this version does not know fails the run
            "--skip-git-repo-check",
            "--json",
            "--color",
            "never",
            "-o",
            str(last),
            *args,
        ],
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=CODEX_TIMEOUT_S,
    )
    elapsed = time.monotonic() - started
    context = f"codex took {elapsed:.1f}s, rc {done.returncode}\n"
    context += f"stdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}"
    assert done.returncode == 0, context
    return done, context


def test_codex_recalls_from_reme(codex_bin: Path, served: Served) -> None:
    script = Script(tool=TOOL, namespace=NAMESPACE, arguments={"query": "larkspur kiln key"})
    with ScriptedServer(script) as model:
        run, _, context = run_codex(codex_bin, served, model.url, served.token)
    context = f"requests: {[r.path for r in script.requests]}\n{context}"
    bodies = script.responses_requests()
    assert bodies, f"codex never called the scripted provider\n{context}"
    # Codex read our config: reme's tools are offered, and our AGENTS.md reached the model.
    assert f"{NAMESPACE}/{TOOL}" in script.offered_tools(), f"{script.offered_tools()}\n{context}"
    assert AGENTS_MARKER in json.dumps(bodies[0]["input"]), context
    # The host called reme's tool over MCP with the token: its output reached the model.
    outputs = script.tool_outputs()
    assert outputs, f"no function_call_output for {NAMESPACE}/{TOOL}\n{context}"
    assert TOKEN_OF_FACT in outputs[-1], f"tool output without the fact: {outputs[-1]}\n{context}"
    assert "notes/kiln.md" in outputs[-1]  # the hit's path, for the answer to cite
    # The final answer carries the recalled fact, in codex's own output.
    last = (run / "last_message.txt").read_text(encoding="utf-8")
    assert TOKEN_OF_FACT in last, context
    server_log = (served.tmp / "server.log").read_text(errors="replace")
    assert '"POST /mcp HTTP/1.1" 200' in server_log, server_log[-3000:]


def test_codex_without_the_token_gets_no_recall_and_still_answers(
    codex_bin: Path, served: Served
) -> None:
    """A wrong token: reme refuses the MCP connection, codex logs one line and answers anyway."""
    script = Script(tool=TOOL, namespace=NAMESPACE, arguments={"query": "larkspur kiln key"})
    with ScriptedServer(script) as model:
        _, stderr, context = run_codex(codex_bin, served, model.url, "reme_wrong_token")
    assert script.responses_requests(), context
    assert f"{NAMESPACE}/{TOOL}" not in script.offered_tools(), context
    assert not script.tool_outputs(), context
    assert 'MCP server startup failed server_name="reme"' in stderr, context
    server_log = (served.tmp / "server.log").read_text(errors="replace")
    assert '"POST /mcp HTTP/1.1" 401' in server_log, server_log[-3000:]


SECOND = "And where is the spare key?"
NOTIFY_TIMEOUT_S = 30


def reme_integrate(workspace: Path, env: dict[str, str], *args: str) -> dict:
    done = subprocess.run(
        [*hosts.reme_command(), "integrate", "codex", "-w", str(workspace), "--json", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def thread_id(stdout: str) -> str:
    for line in stdout.splitlines():
        event = json.loads(line) if line.startswith("{") else {}
        if event.get("type") == "thread.started":
            return event["thread_id"]
    raise AssertionError(f"no thread.started event in codex's output:\n{stdout[-2000:]}")


def log_lines(log: Path, count: int, context: str) -> list[str]:
    """The notify log once it has ``count`` lines (the call is made by a detached process)."""
    deadline = time.monotonic() + NOTIFY_TIMEOUT_S
    while time.monotonic() < deadline:
        lines = log.read_text(encoding="utf-8").splitlines() if log.is_file() else []
        if len(lines) >= count:
            return lines
        time.sleep(0.1)
    found = log.read_text(encoding="utf-8") if log.is_file() else "(no log)"
    raise AssertionError(f"the notify log has not {count} line(s): {found}\n{context}")


def saved(workspace: Path, session_id: str) -> list[dict]:
    path = workspace / "sessions" / f"{session_id}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_codex_sessions_are_captured_as_reme_integrate_codex_sets_up(
    codex_bin: Path, tmp_path: Path
) -> None:
    codex_home, project = tmp_path / "codex_home", tmp_path / "project"
    codex_home.mkdir()
    project.mkdir()
    shutil.copy(INTEGRATION / "AGENTS.md", project / "AGENTS.md")
    workspace = hosts.one_note_workspace(tmp_path / "ws", FACT)
    # The server reads the rollout files: it sees the CODEX_HOME codex writes into.
    server_env = clean_env(**KEYWORD_ONLY_ENV, REME_TIMEZONE="UTC", CODEX_HOME=str(codex_home))
    script = Script(tool=TOOL, namespace=NAMESPACE, arguments={"query": "larkspur kiln key"})
    server_log = tmp_path / "server.log"
    with (
        ScriptedServer(script) as model,
        hosts.reme_served(workspace, server_log, server_env, "read"),
    ):
        base = CONFIG.format(model_url=model.url)
        (codex_home / "config.toml").write_text(base, encoding="utf-8")
        user_env = clean_env(CODEX_HOME=str(codex_home), HOME=str(tmp_path))
        report = reme_integrate(workspace, user_env)
        assert report["status"] == "connected" and report["profile"] == "write", report
        log = tmp_path / "notify.log"
        env = codex_env(codex_home, tmp_path, REME_NOTIFY_LOG=str(log))  # no REME_TOKEN: .env
        done, context = codex_exec(codex_bin, project, env, tmp_path / "last1.txt", QUESTION)
        thread = thread_id(done.stdout)
        # Recall through the entry reme integrate wrote, with the token codex read from .env.
        outputs = script.tool_outputs()
        assert outputs and TOKEN_OF_FACT in outputs[-1], context
        (line,) = log_lines(log, 1, context)
        assert f"{thread}: unsummarised daily/" in line, line  # no model: a verbatim excerpt
        turns = saved(workspace, thread)
        assert [t["role"] for t in turns] == ["user", "assistant"], turns
        assert turns[0]["content"] == QUESTION and TOKEN_OF_FACT in turns[1]["content"]
        note = line.split(" unsummarised ", 1)[1].strip()
        text = (workspace / note).read_text(encoding="utf-8")
        assert f"[[sessions/{thread}.jsonl#L1]]" in text and f"session_id: {thread}" in text
        # A second session on the same thread: only its new turns are captured.
        done, context = codex_exec(
            codex_bin, project, env, tmp_path / "last2.txt", "resume", "--last", SECOND
        )
        assert thread_id(done.stdout) == thread, context
        lines = log_lines(log, 2, context)
        assert f"{thread}: unsummarised {note}" in lines[1], lines
        again = saved(workspace, thread)
        assert again[:2] == turns and [t["role"] for t in again[2:]] == ["user", "assistant"]
        assert again[2]["content"] == SECOND, again
        calls = server_log.read_text(errors="replace").count('"POST /api/v1/auto_memory_codex')
        assert calls == 2, server_log.read_text(errors="replace")[-3000:]
        # --remove puts config.toml back as it was, and takes the token's .env away.
        assert reme_integrate(workspace, user_env, "--remove")["status"] == "removed"
        assert (codex_home / "config.toml").read_text(encoding="utf-8") == base
        assert not (codex_home / ".env").exists()


def set_env_token(env_file: Path, secret: str) -> None:
    """Put ``secret`` in place of the REME_TOKEN that ``reme integrate`` wrote to ``.env``."""
    lines = env_file.read_text(encoding="utf-8").splitlines()
    assert any(line.startswith("REME_TOKEN=") for line in lines), lines
    kept = [line for line in lines if not line.startswith("REME_TOKEN=")]
    env_file.write_text("\n".join([*kept, f"REME_TOKEN={secret}"]) + "\n", encoding="utf-8")


def test_codex_capture_faults_lose_no_turn(codex_bin: Path, tmp_path: Path) -> None:
    """Capture meets reme down, a wrong token and a read-only token in three real ``codex exec``
    sessions: each logs one clear line in the notify log while codex answers (exit 0), and the
    next session's capture, with the good token again, saves all four sessions."""
    codex_home, project = tmp_path / "codex_home", tmp_path / "project"
    codex_home.mkdir()
    project.mkdir()
    shutil.copy(INTEGRATION / "AGENTS.md", project / "AGENTS.md")
    workspace = hosts.one_note_workspace(tmp_path / "ws", FACT)
    server_env = clean_env(**KEYWORD_ONLY_ENV, REME_TIMEZONE="UTC", CODEX_HOME=str(codex_home))
    script = Script(tool=TOOL, namespace=NAMESPACE, arguments={"query": "larkspur kiln key"})
    server_log = tmp_path / "server.log"
    with (
        ScriptedServer(script) as model,
        hosts.reme_served(workspace, server_log, server_env, "read") as (server, read_token),
    ):
        (codex_home / "config.toml").write_text(CONFIG.format(model_url=model.url), "utf-8")
        user_env = clean_env(CODEX_HOME=str(codex_home), HOME=str(tmp_path))
        assert reme_integrate(workspace, user_env)["profile"] == "write"
        config, env_file = codex_home / "config.toml", codex_home / ".env"
        good_config, good_env = config.read_text("utf-8"), env_file.read_text("utf-8")
        assert server["url"] in good_config, good_config
        log = tmp_path / "notify.log"
        env = codex_env(codex_home, tmp_path, REME_NOTIFY_LOG=str(log))
        down = hosts.closed_port_url()
        faults = [
            ("down", f"cannot call {down}: ", "Connection refused"),
            ("wrong", f"{server['url']} answered HTTP 401 (the token is wrong or revoked)", ""),
            ("read", f"{server['url']} answered HTTP 403 (the token may not write here)", ""),
        ]
        threads: list[str] = []
        for n, (fault, expected, also) in enumerate(faults, start=1):
            config.write_text(good_config, "utf-8")
            env_file.write_text(good_env, "utf-8")
            if fault == "down":  # notify and MCP entries both name the stopped server's url
                config.write_text(good_config.replace(server["url"], down), "utf-8")
            else:
                set_env_token(env_file, "reme_wrong_token" if fault == "wrong" else read_token)
            last = tmp_path / f"last-{fault}.txt"
            done, context = codex_exec(codex_bin, project, env, last, QUESTION)  # exit 0
            assert last.read_text(encoding="utf-8").strip(), context  # codex still answered
            threads.append(thread_id(done.stdout))
            line = log_lines(log, n, context)[n - 1]
            assert f" {threads[-1]}: {expected}" in line and also in line, (fault, line)
            assert line.endswith("its turns wait in Codex's rollout for the next call"), line
            assert not (workspace / "sessions" / f"{threads[-1]}.jsonl").exists(), fault
        # The good token again: the next session's capture also retries the three kept ones.
        config.write_text(good_config, "utf-8")
        env_file.write_text(good_env, "utf-8")
        done, context = codex_exec(codex_bin, project, env, tmp_path / "last-good.txt", QUESTION)
        good = thread_id(done.stdout)
        lines = log_lines(log, len(faults) + 4, context)[len(faults) :]
        assert f" {good}: unsummarised daily/" in lines[0], lines
        retried = {
            t for t in threads for line in lines[1:] if f" {t}: (retried) unsummarised" in line
        }
        assert retried == set(threads), lines
        for thread in [*threads, good]:
            turns = saved(workspace, thread)
            assert [t["role"] for t in turns] == ["user", "assistant"], (thread, turns)
            assert turns[0]["content"] == QUESTION, turns
            notes = [
                p
                for p in (workspace / "daily").rglob("*.md")
                if f"[[sessions/{thread}.jsonl#L1]]" in p.read_text(encoding="utf-8")
            ]
            assert notes, f"no daily note links to {thread}'s turns"
        assert not list((tmp_path / "notify.pending").iterdir())  # nothing is left waiting
