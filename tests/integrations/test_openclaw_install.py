"""reme's plugin installed the way OpenClaw documents: ``openclaw plugins install <archive>``.

The plugin is built as in test_openclaw_host.py (openclaw_host.install: the pinned OpenClaw, our
plugin built with its pinned TypeScript), packed with ``npm pack`` (package.json's ``files``:
dist/, openclaw.plugin.json, README.md) and installed by the real ``openclaw plugins install
--force --accept-capabilities reme-openclaw-0.1.0.tgz`` into a temporary state dir. OpenClaw
copies it to ``<state dir>/extensions/reme``, records the install and enables it
(``plugins.entries.reme.enabled``); it writes no ``hooks`` or ``config``, so the test adds
conversation access and the server's url, as the README tells users, and runs one turn offline
(``openclaw agent --local``) against the scripted model: the tool is offered, the answer carries
the recalled fact, capture wrote ``sessions/``. Skipped without node/npm (or a Node >= 24.16 for
this platform) unless REME_REQUIRE_HOSTS=1, where it fails (openclaw_host._unavailable).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

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
CLI_TIMEOUT_S = 120


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


def openclaw_cli(host: OpenClaw, state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``openclaw ARGS`` with ``state`` as its state dir and its parent as home."""
    env = hosts.clean_env(
        ("OPENCLAW_", "OPENAI_", "ANTHROPIC_"),
        HOME=str(state.parent),
        OPENCLAW_STATE_DIR=str(state),
        OPENCLAW_CONFIG_PATH=str(state / "openclaw.json"),
        OPENCLAW_NO_AUTO_UPDATE="1",
        NO_COLOR="1",
        PATH=host.path_env(),
    )
    return subprocess.run(
        [str(host.node_dir / "node"), str(host.entry), *args],
        cwd=state.parent,
        env=env,
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


def test_openclaw_plugins_install_from_the_archive_runs_a_turn(
    openclaw: OpenClaw, served: tuple[str, str, Path], tmp_path: Path
) -> None:
    url, token, workspace = served
    archive = pack(openclaw, tmp_path / "pack")
    state = tmp_path / ".openclaw"
    state.mkdir()
    (state / "openclaw.json").write_text('{"update": {"checkOnStart": false}}', encoding="utf-8")

    # Without --accept-capabilities OpenClaw refuses and installs nothing.
    refused = openclaw_cli(openclaw, state, "plugins", "install", "--force", str(archive))
    assert refused.returncode != 0, refused.stdout + refused.stderr
    assert "--accept-capabilities" in refused.stdout + refused.stderr
    assert not (state / "extensions" / "reme").exists()

    done = openclaw_cli(
        openclaw, state, "plugins", "install", "--force", "--accept-capabilities", str(archive)
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Installed plugin: reme" in done.stdout + done.stderr
    installed = state / "extensions" / "reme"
    assert (installed / "dist" / "index.js").is_file()
    assert (installed / "openclaw.plugin.json").is_file()
    written = json.loads((state / "openclaw.json").read_text(encoding="utf-8"))
    assert written["plugins"]["entries"]["reme"] == {"enabled": True}, written
    inspected = openclaw_cli(openclaw, state, "plugins", "inspect", "reme")
    assert inspected.returncode == 0, inspected.stdout + inspected.stderr
    assert "Status: enabled" in inspected.stdout and "Source: archive" in inspected.stdout

    script = Script(tool=TOOL, arguments={"query": "larkspur kiln key"})
    with ScriptedServer(script) as model:
        settings = openclaw_host.config(model.url, openclaw.plugin, tmp_path / "agent", {})
        del settings["plugins"]  # loaded from extensions/, not from a path
        settings = {**written, **settings, "plugins": written["plugins"]}
        entry = settings["plugins"]["entries"]["reme"]
        entry["hooks"] = {"allowConversationAccess": True}
        entry["config"] = {"url": url, "tokenEnv": "REME_TEST_TOKEN"}
        run = openclaw_host.run_agent(
            openclaw,
            state,
            settings,
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
