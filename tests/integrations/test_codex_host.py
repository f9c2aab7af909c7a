"""Recall from reme inside the real ``codex`` program, pinned, against a scripted model.

``integrations/codex/package.json`` pins ``@openai/codex``; a session fixture installs it with
``npm ci`` into ``$XDG_CACHE_HOME/reme/hosts/codex-<version>`` (else ``~/.cache/...``;
reinstalled only when the lock file changes). Then one scenario runs offline: ``reme serve`` on a
one-note workspace (keyword search, no model) with a read-profile token, a scripted OpenAI
Responses server on 127.0.0.1 (scripted_openai_responses.py), and ``codex exec QUESTION`` with a
temporary CODEX_HOME whose config.toml names the scripted server as the model provider and reme
as a streamable-HTTP MCP server (bearer token from $REME_TOKEN, as integrations/codex/README.md
tells users). The scripted model calls reme's search tool, then quotes what it returned.

Capture of Codex sessions is not tested here (not built yet). Without node and npm the test is
skipped, unless REME_REQUIRE_HOSTS=1 (CI), where it fails.
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
    config = CONFIG.format(model_url=model_url, reme_url=served.url)
    (codex_home / "config.toml").write_text(config, encoding="utf-8")
    env = clean_env(
        CODEX_HOME=str(codex_home),
        HOME=str(run),
        SCRIPTED_API_KEY="sk-scripted-dummy",
        REME_TOKEN=token,
        NO_PROXY="127.0.0.1,localhost",
        RUST_LOG="warn",
    )
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
            str(run / "last_message.txt"),
            QUESTION,
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
    return run, done.stderr, context


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
