"""reme's plugin installed the way OpenClaw documents: ``openclaw plugins install <archive>``.

The plugin is built as in test_openclaw_host.py (openclaw_host.install: the pinned OpenClaw, our
plugin built with its pinned TypeScript), packed with ``npm pack`` (package.json's ``files``:
dist/, openclaw.plugin.json, README.md) and installed by the real ``openclaw plugins install
--force --accept-capabilities reme-openclaw-0.1.0.tgz`` into a temporary state dir. OpenClaw
copies it to ``<state dir>/extensions/reme``, records the install and enables it
(``plugins.entries.reme.enabled``); it writes no ``hooks`` or ``config``, so the test sets
conversation access and the server's url with ``openclaw config set``, as the README tells
users, and runs one turn offline
(``openclaw agent --local``) against the scripted model: the tool is offered, the answer carries
the recalled fact, capture wrote ``sessions/``. Then the Gateway: ``openclaw gateway run``
(foreground, loopback, token auth) loads the installed plugin, and ``openclaw agent`` without
``--local`` sends a turn through it that recalls and captures. Skipped without node/npm (or a Node >= 24.16 for
this platform) unless REME_REQUIRE_HOSTS=1, where it fails (openclaw_host._unavailable).
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import KEYWORD_ONLY_ENV

from tests.integrations import hosts, openclaw_host
from tests.integrations.openclaw_host import OpenClaw
from tests.integrations.scripted_openclaw_chat import Script, ScriptedServer

pytestmark = pytest.mark.slow

FACT = "The larkspur kiln key hangs behind the blue enamel door, tag 7Q-ORCHID."
TOKEN_OF_FACT = "7Q-ORCHID"
QUESTION = "Where does the larkspur kiln key hang?"
TOOL = "reme_search"
RUN_TIMEOUT_S = 240
CLI_TIMEOUT_S = 240
GATEWAY_START_S = 120
RECALL_MARK = "<reme-recall>"


@pytest.fixture(scope="module")
def openclaw(tmp_path_factory: pytest.TempPathFactory) -> OpenClaw:
    return openclaw_host.install(tmp_path_factory.mktemp("openclaw_install_build"))


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, Path]]:
    tmp = tmp_path_factory.mktemp("openclaw_install")
    workspace = hosts.one_note_workspace(tmp / "ws", FACT)
    env = hosts.clean_env(("OPENCLAW_",), **KEYWORD_ONLY_ENV, REME_TIMEZONE="UTC")
    with hosts.reme_served(workspace, tmp / "server.log", env, "write") as (server, token):
        yield server["url"], token, workspace


def cli_env(host: OpenClaw, state: Path, **extra: str) -> dict[str, str]:
    return hosts.clean_env(
        ("OPENCLAW_", "OPENAI_", "ANTHROPIC_"),
        HOME=str(state.parent),
        OPENCLAW_STATE_DIR=str(state),
        OPENCLAW_CONFIG_PATH=str(state / "openclaw.json"),
        OPENCLAW_NO_AUTO_UPDATE="1",
        NO_COLOR="1",
        NO_PROXY="127.0.0.1,localhost",
        PATH=host.path_env(),
        **extra,
    )


def openclaw_cli(
    host: OpenClaw, state: Path, *args: str, **extra: str
) -> subprocess.CompletedProcess[str]:
    """``openclaw ARGS`` with ``state`` as its state dir and its parent as home."""
    return subprocess.run(
        [str(host.node_dir / "node"), str(host.entry), *args],
        cwd=state.parent,
        env=cli_env(host, state, **extra),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
    )


def pack(host: OpenClaw, destination: Path) -> Path:
    """``npm pack`` of the built plugin: the archive a user installs."""
    destination.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["npm", "pack", "--silent", "--pack-destination", str(destination)],
        cwd=host.plugin,
        env={**hosts.clean_env(("OPENCLAW_",)), "PATH": host.path_env()},
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (archive,) = destination.glob("reme-openclaw-*.tgz")
    return archive


def install_plugin(host: OpenClaw, tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """A fresh state dir with the plugin installed by ``openclaw plugins install``; returns it
    and the config OpenClaw wrote."""
    archive = pack(host, tmp_path / "pack")
    state = tmp_path / ".openclaw"
    state.mkdir()
    (state / "openclaw.json").write_text('{"update": {"checkOnStart": false}}', encoding="utf-8")
    done = openclaw_cli(
        host, state, "plugins", "install", "--force", "--accept-capabilities", str(archive)
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Installed plugin: reme" in done.stdout + done.stderr
    return state, json.loads((state / "openclaw.json").read_text(encoding="utf-8"))


def settings_for(
    host: OpenClaw, model_url: str, written: dict[str, Any], agent_dir: Path, url: str
) -> dict[str, Any]:
    """What OpenClaw wrote, plus the scripted model and the entry's hooks and config (the two
    things `plugins install` leaves to the user)."""
    settings = openclaw_host.config(model_url, host.plugin, agent_dir, {})
    del settings["plugins"]  # loaded from extensions/, not from a path
    settings = {**written, **settings, "plugins": json.loads(json.dumps(written["plugins"]))}
    entry = settings["plugins"]["entries"]["reme"]
    entry["hooks"] = {"allowConversationAccess": True}
    entry["config"] = {"url": url, "tokenEnv": "REME_TEST_TOKEN"}
    return settings


def test_openclaw_plugins_install_from_the_archive_runs_a_turn(
    openclaw: OpenClaw, served: tuple[str, str, Path], tmp_path: Path
) -> None:
    url, token, workspace = served
    archive = pack(openclaw, tmp_path / "refused")
    state = tmp_path / "refused" / ".openclaw"
    state.mkdir()
    (state / "openclaw.json").write_text('{"update": {"checkOnStart": false}}', encoding="utf-8")

    # Without --accept-capabilities OpenClaw refuses and installs nothing.
    refused = openclaw_cli(openclaw, state, "plugins", "install", "--force", str(archive))
    assert refused.returncode != 0, refused.stdout + refused.stderr
    assert "--accept-capabilities" in refused.stdout + refused.stderr
    assert not (state / "extensions" / "reme").exists()

    state, written = install_plugin(openclaw, tmp_path)
    installed = state / "extensions" / "reme"
    assert (installed / "dist" / "index.js").is_file()
    assert (installed / "openclaw.plugin.json").is_file()
    assert written["plugins"]["entries"]["reme"] == {"enabled": True}, written
    inspected = openclaw_cli(openclaw, state, "plugins", "inspect", "reme")
    assert inspected.returncode == 0, inspected.stdout + inspected.stderr
    assert "Status: enabled" in inspected.stdout and "Source: archive" in inspected.stdout

    script = Script(tool=TOOL, arguments={"query": "larkspur kiln key"})
    with ScriptedServer(script) as model:
        settings = settings_for(openclaw, model.url, written, tmp_path / "agent", url)
        wanted = settings["plugins"]["entries"]["reme"]
        del wanted["hooks"], wanted["config"]  # set below with OpenClaw's own `config set`
        (state / "openclaw.json").write_text(json.dumps(settings, indent=2), encoding="utf-8")
        plugin_config = json.dumps({"url": url, "tokenEnv": "REME_TEST_TOKEN"})
        for key, value in (
            ("plugins.entries.reme.hooks.allowConversationAccess", "true"),
            ("plugins.entries.reme.config", plugin_config),
        ):
            done = openclaw_cli(openclaw, state, "config", "set", key, value, "--strict-json")
            assert done.returncode == 0, done.stdout + done.stderr
        entry = json.loads((state / "openclaw.json").read_text())["plugins"]["entries"]["reme"]
        assert entry["hooks"] == {"allowConversationAccess": True}, entry
        run = openclaw_host.run_agent(
            openclaw,
            state,
            None,
            "installed-1",
            QUESTION,
            {"REME_TEST_TOKEN": token},
            RUN_TIMEOUT_S,
        )
    assert run.returncode == 0, run.context()
    assert TOOL in script.offered_tools(), run.context()
    assert TOKEN_OF_FACT in run.answer(), run.context()
    assert not run.reme_lines(), run.context()
    transcript = workspace / "sessions" / "openclaw-installed-1.jsonl"
    assert transcript.is_file(), run.context()
    assert QUESTION in transcript.read_text(encoding="utf-8")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_gateway_loads_the_installed_plugin_and_a_turn_through_it_recalls_and_captures(
    openclaw: OpenClaw, served: tuple[str, str, Path], tmp_path: Path
) -> None:
    """``openclaw gateway run`` (foreground, loopback, token auth) loads the installed plugin;
    ``openclaw agent`` without --local sends the turn to it over its WebSocket; the gateway's
    runner offers reme's tools, recall puts the hit in the prompt, capture writes sessions/."""
    url, token, workspace = served
    state, written = install_plugin(openclaw, tmp_path)
    port, secret = free_port(), "gateway-test-token"
    extra = {"REME_TEST_TOKEN": token, "OPENCLAW_GATEWAY_TOKEN": secret}
    script = Script(tool=TOOL, arguments={"query": "larkspur kiln key"})
    log_path = tmp_path / "gateway.log"
    with ScriptedServer(script) as model:
        settings = settings_for(openclaw, model.url, written, tmp_path / "agent", url)
        settings["gateway"] = {"mode": "local", "bind": "loopback", "port": port}
        (state / "openclaw.json").write_text(json.dumps(settings, indent=2), encoding="utf-8")
        command = [str(openclaw.node_dir / "node"), str(openclaw.entry), "gateway", "run"]
        command += ["--port", str(port), "--bind", "loopback", "--auth", "token"]
        command += ["--token", secret, "--verbose"]
        with log_path.open("w") as log:
            gateway = subprocess.Popen(
                command,
                cwd=tmp_path,
                env=cli_env(openclaw, state, **extra),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        try:
            deadline = time.monotonic() + GATEWAY_START_S
            while "http server listening" not in log_path.read_text(errors="replace"):
                assert gateway.poll() is None, log_path.read_text(errors="replace")[-4000:]
                assert time.monotonic() < deadline, log_path.read_text(errors="replace")[-4000:]
                time.sleep(0.2)
            started = log_path.read_text(errors="replace")
            assert "[plugins] loading reme from " in started, started[-4000:]
            assert str(state / "extensions" / "reme") in started
            listening = next(
                line for line in started.splitlines() if "http server listening" in line
            )
            assert "reme" in listening.split("plugins:", 1)[1], listening
            health = openclaw_cli(openclaw, state, "gateway", "health", **extra)
            assert health.returncode == 0, health.stdout + health.stderr
            run = openclaw_cli(
                openclaw,
                state,
                "agent",
                "--session-id",
                "gateway-1",
                "--message",
                QUESTION,
                "--json",
                **extra,
            )
        finally:
            gateway.terminate()
            try:
                gateway.wait(timeout=20)
            except subprocess.TimeoutExpired:
                gateway.kill()
                gateway.wait()
    log = log_path.read_text(errors="replace")
    context = f"{run.stdout[-3000:]}\n{run.stderr[-3000:]}\ngateway:\n{log[-4000:]}"
    assert run.returncode == 0, context
    assert "res \u2713 agent" in log, context  # the turn went through the gateway's agent method
    assert TOOL in script.offered_tools(), context
    first = json.dumps(script.completions()[0]["messages"])
    assert RECALL_MARK in first and TOKEN_OF_FACT in first, context
    assert TOKEN_OF_FACT in run.stdout, context
    transcript = workspace / "sessions" / "openclaw-gateway-1.jsonl"
    assert transcript.is_file(), context
    roles = [json.loads(line)["role"] for line in transcript.read_text().splitlines() if line]
    assert roles == ["user", "assistant", "tool", "assistant"], roles
