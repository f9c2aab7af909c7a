"""reme inside the real ``openclaw`` program, pinned, with our plugin, against a scripted model.

``integrations/openclaw/package.json`` + ``package-lock.json`` pin ``openclaw`` (and the
TypeScript the plugin builds with); a session fixture installs them with ``npm ci`` into
``$XDG_CACHE_HOME/reme/hosts/openclaw-<version>`` (else ``~/.cache/...``), with a Node >= 24.16
first on PATH (openclaw_host.py), builds the plugin there with ``npm run build`` and runs its own
unit tests (``node --test``). Then, offline: ``reme serve`` on a one-note workspace (keyword
search, no model) with a fresh token, a scripted OpenAI Chat Completions server on 127.0.0.1
(scripted_openclaw_chat.py, streaming), and ``openclaw agent --local --session-id ... --json``
with a temporary state dir whose openclaw.json names the scripted provider and loads the plugin
from its build folder (``plugins.load.paths``), as integrations/openclaw/README.md tells users.

The scripted model calls the plugin's ``reme_search`` tool, then quotes what it returned. The
tests check that reme answered the tool with the token, that the answer carries the fact, that
recall put the hit in the prompt, that capture wrote ``sessions/`` and a ``daily/`` note linking
back, and that a second session of the same conversation adds only its new turns. The faults
(server down, a wrong token, a read-only token) each give one line in OpenClaw's log, a reply all
the same, and no lost turn. Last, ``reme integrate openclaw`` alone connects an OpenClaw whose
config names only its model: OpenClaw accepts what it wrote and takes the token from its .env.
Without node/npm (or a Node >= 24.16 for this platform) the tests are
skipped, unless REME_REQUIRE_HOSTS=1 (CI), where they fail.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest
from conftest import KEYWORD_ONLY_ENV

from reme_core.workspace import parse_frontmatter
from tests.integrations import hosts, openclaw_host
from tests.integrations.openclaw_host import OpenClaw, Run
from tests.integrations.scripted_openclaw_chat import Script, ScriptedServer

pytestmark = pytest.mark.slow

FACT = "The larkspur kiln key hangs behind the blue enamel door, tag 7Q-ORCHID."
TOKEN_OF_FACT = "7Q-ORCHID"
QUESTION = "Where does the larkspur kiln key hang?"
FOLLOW_UP = "And which door was that again?"
TOOL = "reme_search"
RECALL_MARK = "<reme-recall>"
RUN_TIMEOUT_S = 240
UNIT_TIMEOUT_S = 120


@pytest.fixture(scope="session")
def openclaw(tmp_path_factory: pytest.TempPathFactory) -> OpenClaw:
    """The pinned OpenClaw and our plugin built against it."""
    host = openclaw_host.install(tmp_path_factory.mktemp("openclaw_build"))
    done = subprocess.run(
        [str(host.node_dir / "node"), str(host.entry), "--version"],
        env=hosts.clean_env(("OPENCLAW_",), PATH=host.path_env(), OPENCLAW_NO_AUTO_UPDATE="1"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and host.version in done.stdout, done.stdout + done.stderr
    return host


class Served(NamedTuple):
    url: str
    token: str
    workspace: Path
    tmp: Path

    def server_log(self) -> str:
        return (self.tmp / "server.log").read_text(errors="replace")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """``reme serve`` over a one-note workspace, with a write-profile token for the plugin."""
    tmp = tmp_path_factory.mktemp("openclaw_host")
    workspace = hosts.one_note_workspace(tmp / "ws", FACT)
    env = hosts.clean_env(("OPENCLAW_",), **KEYWORD_ONLY_ENV, REME_TIMEZONE="UTC")
    with hosts.reme_served(workspace, tmp / "server.log", env, "write") as (server, token):
        assert server["auth"] is True  # so a tool result proves the host sent the token
        yield Served(server["url"], token, workspace, tmp)


def token_with(served: Served, profile: str) -> str:
    return hosts.new_token(
        served.workspace, hosts.clean_env(("OPENCLAW_",), **KEYWORD_ONLY_ENV), profile
    )


def ask(
    openclaw: OpenClaw,
    state: Path,
    session: str,
    message: str,
    url: str,
    token: str,
) -> tuple[Run, Script]:
    """One turn through OpenClaw with the plugin pointed at ``url`` and ``token``; exit 0."""
    script = Script(tool=TOOL, arguments={"query": "larkspur kiln key"})
    plugin_config = {"url": url, "tokenEnv": "REME_TEST_TOKEN"}
    with ScriptedServer(script) as model:
        settings = openclaw_host.config(model.url, openclaw.plugin, state / "agent", plugin_config)
        run = openclaw_host.run_agent(
            openclaw,
            state / ".openclaw",
            settings,
            session,
            message,
            {"REME_TEST_TOKEN": token},
            RUN_TIMEOUT_S,
        )
    context = f"requests: {[r.path for r in script.requests]}\n{run.context()}"
    assert run.returncode == 0, context
    assert script.completions(), f"openclaw never called the scripted model\n{context}"
    return run, script


def transcript(served: Served, session: str) -> list[dict]:
    path = served.workspace / "sessions" / f"openclaw-{session}.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def daily_note(served: Served, session: str) -> Path | None:
    for path in sorted((served.workspace / "daily").glob("*/*.md")):
        front, _ = parse_frontmatter(path.read_text(encoding="utf-8"))
        if front.get("source") == f"[[sessions/openclaw-{session}.jsonl]]":
            return path
    return None


def test_plugin_unit_tests_pass(openclaw: OpenClaw) -> None:
    """The plugin's own tests (``npm test``: node --test over the built dist/test)."""
    done = subprocess.run(
        ["npm", "test", "--silent"],
        cwd=openclaw.plugin,
        env={**hosts.clean_env(("OPENCLAW_",)), "PATH": openclaw.path_env()},
        capture_output=True,
        text=True,
        timeout=UNIT_TIMEOUT_S,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "# fail 0" in done.stdout or "ℹ fail 0" in done.stdout, done.stdout[-2000:]


def test_openclaw_recalls_and_captures(openclaw: OpenClaw, served: Served, tmp_path: Path) -> None:
    session = "kiln-1"
    run, script = ask(openclaw, tmp_path, session, QUESTION, served.url, served.token)
    context = run.context()
    # OpenClaw loaded the plugin: its tools are offered, and recall put the hit in the prompt.
    assert TOOL in script.offered_tools(), f"{script.offered_tools()}\n{context}"
    first = json.dumps(script.completions()[0]["messages"])
    assert RECALL_MARK in first and TOKEN_OF_FACT in first, context
    # The host called reme's search through the plugin with the token: the fact came back.
    outputs = script.tool_outputs()
    assert outputs and TOKEN_OF_FACT in outputs[-1], f"{outputs}\n{context}"
    assert "notes/kiln.md" in outputs[-1]
    log = served.server_log()
    assert '"POST /api/v1/search HTTP/1.1" 200' in log, log[-3000:]
    # The final answer carries the recalled fact, in OpenClaw's own output.
    assert TOKEN_OF_FACT in run.answer(), context
    assert not run.reme_lines(), context  # nothing went wrong, so the plugin said nothing
    # Capture (agent_end) wrote the transcript under sessions/ and a daily/ note linking back.
    turns = transcript(served, session)
    assert [t["role"] for t in turns] == ["user", "assistant", "tool", "assistant"], turns
    assert turns[0]["content"] == QUESTION  # the recall block was not saved as the user's words
    assert TOKEN_OF_FACT in turns[-1]["content"]
    note = daily_note(served, session)
    assert note, f"no daily note for openclaw-{session}\n{log[-3000:]}"
    text = note.read_text(encoding="utf-8")
    assert parse_frontmatter(text)[0].get("summarised") is False  # no model on reme's side
    assert QUESTION in text and TOKEN_OF_FACT in text
    assert '"POST /api/v1/auto_memory HTTP/1.1" 200' in served.server_log()

    # A second session of the same conversation: only its new turns are added.
    again, script2 = ask(openclaw, tmp_path, session, FOLLOW_UP, served.url, served.token)
    assert TOKEN_OF_FACT in again.answer(), again.context()
    # The model saw the first session's turns (the same conversation) ...
    assert QUESTION in json.dumps(script2.completions()[0]["messages"])
    after = transcript(served, session)
    assert after[: len(turns)] == turns, after  # ... and nothing before was rewritten
    added = after[len(turns) :]
    assert [t["role"] for t in added] == ["user", "assistant", "tool", "assistant"], added
    assert added[0]["content"] == FOLLOW_UP
    assert [t["content"] for t in after].count(QUESTION) == 1
    assert daily_note(served, session) == note  # the same session note, updated


def test_openclaw_with_reme_down_answers_and_loses_no_turn(
    openclaw: OpenClaw, served: Served, tmp_path: Path
) -> None:
    """Server down: one line in OpenClaw's log, a reply anyway, the turn kept in the spool and
    saved by the next capture once reme is back."""
    down, _ = ask(openclaw, tmp_path, "down-1", QUESTION, hosts.closed_port_url(), served.token)
    lines = down.reme_lines()
    assert len(lines) == 1 and "unreachable" in lines[0], down.context()
    assert down.answer(), down.context()  # the reply still comes
    spool = tmp_path / ".openclaw" / "reme-spool"
    assert [p.name for p in spool.glob("*.json")] == ["openclaw-down-1.json"]
    assert not transcript(served, "down-1")

    # reme is reachable again: the next turn (another session) also sends the spooled one.
    up, _ = ask(openclaw, tmp_path, "down-2", QUESTION, served.url, served.token)
    assert not up.reme_lines(), up.context()
    saved = transcript(served, "down-1")
    assert saved and saved[0]["content"] == QUESTION, saved
    assert transcript(served, "down-2")
    assert not list(spool.glob("*.json"))


def test_openclaw_with_a_wrong_token_answers_and_says_so_once(
    openclaw: OpenClaw, served: Served, tmp_path: Path
) -> None:
    run, script = ask(openclaw, tmp_path, "wrong-1", QUESTION, served.url, "reme_wrong_token")
    lines = run.reme_lines()
    assert len(lines) == 1 and "token refused (HTTP 401" in lines[0], run.context()
    assert run.answer(), run.context()
    assert RECALL_MARK not in json.dumps(script.completions()[0]["messages"])
    assert '"POST /api/v1/search HTTP/1.1" 401' in served.server_log()
    assert (tmp_path / ".openclaw" / "reme-spool" / "openclaw-wrong-1.json").is_file()
    assert not transcript(served, "wrong-1")


def test_openclaw_with_a_read_only_token_recalls_and_keeps_the_turns(
    openclaw: OpenClaw, served: Served, tmp_path: Path
) -> None:
    run, _ = ask(openclaw, tmp_path, "read-1", QUESTION, served.url, token_with(served, "read"))
    assert TOKEN_OF_FACT in run.answer(), run.context()  # recall and the tool work
    lines = run.reme_lines()
    assert len(lines) == 1 and "HTTP 403" in lines[0] and "write token" in lines[0], run.context()
    spooled = tmp_path / ".openclaw" / "reme-spool" / "openclaw-read-1.json"
    assert json.loads(spooled.read_text())["messages"][0]["content"] == QUESTION
    assert not transcript(served, "read-1")


def test_reme_integrate_openclaw_connects_the_real_host(
    openclaw: OpenClaw, served: Served, tmp_path: Path
) -> None:
    """`reme integrate openclaw` alone connects a user's OpenClaw (whose config names only its
    model): OpenClaw's validator accepts what it wrote, loads the plugin, and takes the token from
    the .env it wrote, with no token in OpenClaw's environment."""
    state = tmp_path / ".openclaw"
    script = Script(tool=TOOL, arguments={"query": "larkspur kiln key"})
    with ScriptedServer(script) as model:
        settings = openclaw_host.config(model.url, openclaw.plugin, tmp_path / "agent", {})
        del settings["plugins"]  # what the user had: a model, no reme
        state.mkdir()
        (state / "openclaw.json").write_text(json.dumps(settings, indent=2), encoding="utf-8")
        done = subprocess.run(
            [*hosts.reme_command(), "integrate", "openclaw", "-w", str(served.workspace), "--json"],
            env=hosts.clean_env(
                ("OPENCLAW_",),
                HOME=str(tmp_path),
                OPENCLAW_STATE_DIR=str(state),
                REME_OPENCLAW_PLUGIN=str(openclaw.plugin),
            ),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert json.loads(done.stdout)["status"] == "connected"
        assert "REME_TOKEN=" in (state / ".env").read_text(encoding="utf-8")
        run = openclaw_host.run_agent(
            openclaw, state, None, "integrated-1", QUESTION, {}, RUN_TIMEOUT_S
        )
    assert run.returncode == 0, run.context()
    assert TOOL in script.offered_tools(), run.context()
    assert TOKEN_OF_FACT in run.answer(), run.context()
    assert not run.reme_lines(), run.context()
    assert transcript(served, "integrated-1"), run.context()
