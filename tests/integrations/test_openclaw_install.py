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
``--local`` sends a turn through it that recalls and captures, then a second turn of the same
session that adds only its new turns. The faults through the Gateway (reme down, a wrong token, a
read-only token; one gateway each, since the plugin reads its url and token at start): one
``reme:`` line in the gateway's log, a reply, the turns kept in the spool and sent by the next
gateway's first capture. Skipped without node/npm (or a Node >= 24.16 for
this platform) unless REME_REQUIRE_HOSTS=1, where it fails (openclaw_host._unavailable).
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from conftest import KEYWORD_ONLY_ENV

from reme_core.workspace import parse_frontmatter
from tests.integrations import hosts, openclaw_host
from tests.integrations.openclaw_host import OpenClaw
from tests.integrations.scripted_openclaw_chat import Script, ScriptedServer

pytestmark = pytest.mark.slow

FACT = "The larkspur kiln key hangs behind the blue enamel door, tag 7Q-ORCHID."
TOKEN_OF_FACT = "7Q-ORCHID"
QUESTION = "Where does the larkspur kiln key hang?"
FOLLOW_UP = "And which door was that again?"
TOOL = "reme_search"
RUN_TIMEOUT_S = 240
CLI_TIMEOUT_S = 240
GATEWAY_START_S = 120
CAPTURE_WAIT_S = 60
RECALL_MARK = "<reme-recall>"


@pytest.fixture(scope="module")
def openclaw(tmp_path_factory: pytest.TempPathFactory) -> OpenClaw:
    return openclaw_host.install(tmp_path_factory.mktemp("openclaw_install_build"))


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[hosts.Served]:
    folder = tmp_path_factory.mktemp("openclaw_install")
    env = hosts.clean_env(("OPENCLAW_",), **KEYWORD_ONLY_ENV, REME_TIMEZONE="UTC")
    with hosts.served_one_note(folder, FACT, env) as served:
        yield served


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
    openclaw: OpenClaw, served: hosts.Served, tmp_path: Path
) -> None:
    url, token, workspace = served.url, served.token, served.workspace
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


class Gateway(NamedTuple):
    """A running ``openclaw gateway run``: its state dir, its log and what its CLI needs."""

    host: OpenClaw
    state: Path
    log: Path
    extra: dict[str, str]

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def reme_lines(self) -> list[str]:
        """Lines the plugin wrote to the gateway's log (``reme: ...``)."""
        return [line for line in self.text().splitlines() if "reme: " in line]

    def ask(self, session: str, message: str) -> openclaw_host.Run:
        """``openclaw agent --session-id SESSION --message MESSAGE --json`` without --local: the
        turn goes to this gateway over its WebSocket."""
        started = time.monotonic()
        done = openclaw_cli(
            self.host,
            self.state,
            *("agent", "--session-id", session, "--message", message, "--json"),
            **self.extra,
        )
        return openclaw_host.Run(
            done.returncode, done.stdout, done.stderr, time.monotonic() - started
        )

    def context(self, run: openclaw_host.Run) -> str:
        return f"{run.context()}\ngateway:\n{self.text()[-4000:]}"


@contextmanager
def gateway(
    host: OpenClaw,
    state: Path,
    settings: dict[str, Any],
    log_path: Path,
    reme_token: str,
) -> Iterator[Gateway]:
    """``openclaw gateway run`` (foreground, loopback, token auth) over ``state`` with
    ``settings`` as its openclaw.json and ``reme_token`` in its environment, started and
    healthy (``openclaw gateway health``); stopped on exit."""
    port, secret = hosts.free_port(), "gateway-test-token"
    extra = {"REME_TEST_TOKEN": reme_token, "OPENCLAW_GATEWAY_TOKEN": secret}
    settings = {**settings, "gateway": {"mode": "local", "bind": "loopback", "port": port}}
    (state / "openclaw.json").write_text(json.dumps(settings, indent=2), encoding="utf-8")
    command = [str(host.node_dir / "node"), str(host.entry), "gateway", "run"]
    command += ["--port", str(port), "--bind", "loopback", "--auth", "token"]
    command += ["--token", secret, "--verbose"]
    with log_path.open("w") as log:
        process = subprocess.Popen(
            command,
            cwd=state.parent,
            env=cli_env(host, state, **extra),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    running = Gateway(host, state, log_path, extra)
    try:
        deadline = time.monotonic() + GATEWAY_START_S
        while "http server listening" not in running.text():
            assert process.poll() is None, running.text()[-4000:]
            assert time.monotonic() < deadline, running.text()[-4000:]
            time.sleep(0.2)
        # Its default 10 s is short on a loaded machine while the gateway finishes starting.
        wait = str(GATEWAY_START_S * 1000)
        health = openclaw_cli(host, state, "gateway", "health", "--timeout", wait, **extra)
        assert health.returncode == 0, health.stdout + health.stderr
        yield running
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def settle(done: Callable[[], object], what: str, timeout: float = CAPTURE_WAIT_S) -> None:
    """Wait for ``done()``: the gateway may run capture (agent_end) after the reply is out."""
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.2)


def transcript(served: hosts.Served, session: str) -> list[dict[str, Any]]:
    path = served.workspace / "sessions" / f"openclaw-{session}.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def daily_note(served: hosts.Served, session: str) -> Path | None:
    for path in sorted((served.workspace / "daily").glob("*/*.md")):
        front, _ = parse_frontmatter(path.read_text(encoding="utf-8"))
        if front.get("source") == f"[[sessions/openclaw-{session}.jsonl]]":
            return path
    return None


def test_the_gateway_loads_the_installed_plugin_and_a_turn_through_it_recalls_and_captures(
    openclaw: OpenClaw, served: hosts.Served, tmp_path: Path
) -> None:
    """``openclaw gateway run`` (foreground, loopback, token auth) loads the installed plugin;
    ``openclaw agent`` without --local sends the turn to it over its WebSocket; the gateway's
    runner offers reme's tools, recall puts the hit in the prompt, capture writes sessions/ and
    daily/. A second session of the same conversation, through the same gateway, adds only its
    new turns."""
    state, written = install_plugin(openclaw, tmp_path)
    script = Script(tool=TOOL, arguments={"query": "larkspur kiln key"})
    with ScriptedServer(script) as model:
        settings = settings_for(openclaw, model.url, written, tmp_path / "agent", served.url)
        with gateway(openclaw, state, settings, tmp_path / "gateway.log", served.token) as gw:
            started = gw.text()
            assert "[plugins] loading reme from " in started, started[-4000:]
            assert str(state / "extensions" / "reme") in started
            listening = next(
                line for line in started.splitlines() if "http server listening" in line
            )
            assert "reme" in listening.split("plugins:", 1)[1], listening
            run = gw.ask("gateway-1", QUESTION)
            context = gw.context(run)
            assert run.returncode == 0, context
            assert "res \u2713 agent" in gw.text(), context  # through the gateway's agent method
            assert TOOL in script.offered_tools(), context
            first = json.dumps(script.completions()[0]["messages"])
            assert RECALL_MARK in first and TOKEN_OF_FACT in first, context
            assert TOKEN_OF_FACT in run.answer(), context
            settle(lambda: len(transcript(served, "gateway-1")) >= 4, "the capture")
            turns = transcript(served, "gateway-1")
            assert [t["role"] for t in turns] == ["user", "assistant", "tool", "assistant"], turns
            assert turns[0]["content"] == QUESTION  # the recall block is not the user's words
            note = daily_note(served, "gateway-1")
            assert note and QUESTION in note.read_text(encoding="utf-8"), context

            # The same conversation again, through the same gateway: only its new turns are added.
            asked = len(script.completions())
            again = gw.ask("gateway-1", FOLLOW_UP)
            context = gw.context(again)
            assert again.returncode == 0, context
            assert TOKEN_OF_FACT in again.answer(), context
            # The model saw the first turn's messages (the same session) ...
            follow = [json.dumps(c["messages"]) for c in script.completions()[asked:]]
            assert any(FOLLOW_UP in m and QUESTION in m for m in follow), context
            settle(lambda: len(transcript(served, "gateway-1")) > len(turns), "the capture")
            assert not gw.reme_lines(), context  # nothing went wrong, so the plugin said nothing
    after = transcript(served, "gateway-1")
    assert after[: len(turns)] == turns, after  # ... and nothing before was rewritten
    added = after[len(turns) :]
    assert [t["role"] for t in added] == ["user", "assistant", "tool", "assistant"], added
    assert added[0]["content"] == FOLLOW_UP
    assert [t["content"] for t in after].count(QUESTION) == 1
    assert daily_note(served, "gateway-1") == note  # the same session note, updated


def test_through_the_gateway_each_fault_is_one_line_a_reply_and_no_lost_turn(
    openclaw: OpenClaw, served: hosts.Served, tmp_path: Path
) -> None:
    """A gateway whose plugin finds reme down, one with a wrong token, one with a read-only token
    (the plugin reads its url and token when the gateway starts, so one gateway each): each
    turn through it gets a reply, the gateway's log one ``reme:`` line naming the fault, and the
    turns wait in the state dir's spool. A gateway set up right then takes a turn, and its
    capture sends the three waiting sessions too."""
    state, written = install_plugin(openclaw, tmp_path)
    env = hosts.clean_env(("OPENCLAW_",), **KEYWORD_ONLY_ENV)
    read_only = hosts.new_token(served.workspace, env, "read")
    faults = (
        ("gw-down", hosts.closed_port_url(), served.token, "unreachable"),
        ("gw-wrong", served.url, "reme_wrong_token", "token refused (HTTP 401"),
        ("gw-read", served.url, read_only, "HTTP 403"),
    )
    spool = state / "reme-spool"
    for session, url, token, fault in faults:
        script = Script(tool=TOOL, arguments={"query": "larkspur kiln key"})
        with ScriptedServer(script) as model:
            settings = settings_for(openclaw, model.url, written, tmp_path / "agent", url)
            with gateway(openclaw, state, settings, tmp_path / f"{session}.log", token) as gw:
                run = gw.ask(session, QUESTION)
                context = gw.context(run)
                settle((spool / f"openclaw-{session}.json").is_file, f"{session} spooled")
                lines = gw.reme_lines()
        assert run.returncode == 0, context
        assert run.answer(), context  # the reply comes all the same
        assert len(lines) == 1 and fault in lines[0], f"{lines}\n{context}"
        if session == "gw-read":  # recall and the tool work with a read token; capture does not
            assert "write token" in lines[0], lines
            assert TOKEN_OF_FACT in run.answer(), context
        else:
            assert RECALL_MARK not in json.dumps(script.completions()[0]["messages"]), context
        pending = json.loads((spool / f"openclaw-{session}.json").read_text(encoding="utf-8"))
        assert pending["messages"][0]["content"] == QUESTION, pending
        assert not transcript(served, session)
    assert "reme_wrong_token" not in (tmp_path / "gw-wrong.log").read_text(errors="replace")

    # Set up right: the next capture, of another session, sends the waiting ones first.
    script = Script(tool=TOOL, arguments={"query": "larkspur kiln key"})
    with ScriptedServer(script) as model:
        settings = settings_for(openclaw, model.url, written, tmp_path / "agent", served.url)
        with gateway(openclaw, state, settings, tmp_path / "gw-up.log", served.token) as gw:
            run = gw.ask("gw-up", QUESTION)
            context = gw.context(run)
            settle(lambda: transcript(served, "gw-up") and not list(spool.glob("*.json")), "up")
            lines = gw.reme_lines()
    assert run.returncode == 0 and TOKEN_OF_FACT in run.answer(), context
    assert not lines, context
    for session, *_ in (*faults, ("gw-up",)):
        saved = transcript(served, session)
        assert [t["role"] for t in saved] == ["user", "assistant", "tool", "assistant"], saved
        assert saved[0]["content"] == QUESTION, saved
    assert not list(spool.glob("*.json")), sorted(spool.iterdir())
