"""`reme integrate openclaw`: adds the built plugin folder to openclaw.json's plugins.load.paths,
writes plugins.entries.reme (conversation access, the server's url, the token's variable) and a
write token in the state dir's .env; a rerun or a dry run changes nothing, `--remove` puts every
file back exactly and revokes the token, and a config it cannot edit (JSON5 with comments) or an
unbuilt plugin is refused with nothing changed. That the real OpenClaw accepts and loads what
this writes is tests/integrations/test_openclaw_host.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from reme_core.server.auth import TokenStore
from tests.cli import integrate_cli
from tests.cli.integrate_cli import list_line, listed, run, served_workspace, snapshot, tokens

CONFIG = {
    "agents": {"defaults": {"model": {"primary": "openai/gpt-5.4"}}},
    "plugins": {"load": {"paths": ["/opt/other-plugin"]}, "entries": {"other": {"enabled": True}}},
}
"""An openclaw.json a user had: a model, another plugin loaded from a path."""


@pytest.fixture
def state(tmp_path: Path, fake_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "openclaw_state"
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(folder))
    monkeypatch.delenv("OPENCLAW_CONFIG_PATH", raising=False)
    return folder


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A built copy of the plugin (its manifest and dist/index.js)."""
    folder = tmp_path / "reme-openclaw"
    (folder / "dist").mkdir(parents=True)
    (folder / "openclaw.plugin.json").write_text('{"id": "reme"}', "utf-8")
    (folder / "dist" / "index.js").write_text("export default {};\n", "utf-8")
    monkeypatch.setenv("REME_OPENCLAW_PLUGIN", str(folder))
    return folder


@pytest.fixture
def workspace(tmp_path: Path, state: Path) -> Path:
    return served_workspace(tmp_path)


def integrate(workspace: Path, *args: str) -> dict:
    return integrate_cli.integrate("openclaw", workspace, *args)


def test_connect_writes_the_plugin_entry_and_a_write_token(
    state: Path, plugin: Path, workspace: Path
) -> None:
    state.mkdir()
    (state / "openclaw.json").write_text(json.dumps(CONFIG, indent=2), "utf-8")
    report = integrate(workspace)
    assert report["status"] == "connected" and report["profile"] == "write"
    written = json.loads((state / "openclaw.json").read_text("utf-8"))
    assert written["agents"] == CONFIG["agents"]  # the rest as it was
    assert written["plugins"]["load"]["paths"] == ["/opt/other-plugin", str(plugin)]
    assert written["plugins"]["entries"]["other"] == {"enabled": True}
    assert written["plugins"]["entries"]["reme"] == {
        "enabled": True,
        "hooks": {"allowConversationAccess": True},
        "config": {"url": "http://127.0.0.1:2333", "tokenEnv": "REME_TOKEN"},
    }
    env = state / ".env"
    assert env.stat().st_mode & 0o777 == 0o600
    (line,) = env.read_text("utf-8").splitlines()
    secret = line.removeprefix("REME_TOKEN=")
    principal = TokenStore(workspace / ".reme").verify(secret)
    assert principal is not None and principal.profile == "write"
    assert secret not in (state / "openclaw.json").read_text("utf-8")
    admin = (workspace / ".reme/token").read_text("utf-8").strip()
    assert all(admin not in p.read_text("utf-8") for p in state.rglob("*") if p.is_file())
    assert secret not in json.dumps(report)


def test_rerun_and_dry_run_change_nothing(state: Path, plugin: Path, workspace: Path) -> None:
    dry = integrate(workspace, "--dry-run")
    assert dry["status"] == "would connect" and not state.exists()
    first = integrate(workspace)
    before = snapshot(state)
    again = integrate(workspace)
    assert again["status"] == "already connected" and again["changes"] == []
    assert again["token"] == first["token"] and snapshot(state) == before


def test_remove_restores_byte_for_byte_and_revokes_the_token(
    state: Path, plugin: Path, workspace: Path
) -> None:
    state.mkdir()
    (state / "openclaw.json").write_text(json.dumps(CONFIG, indent=4) + "\n", "utf-8")
    before = snapshot(state)
    report = integrate(workspace)
    assert integrate(workspace, "--remove")["status"] == "removed"
    assert snapshot(state) == before
    assert report["token"] not in tokens(workspace)


def test_json5_with_comments_is_refused_and_nothing_changes(
    state: Path, plugin: Path, workspace: Path
) -> None:
    state.mkdir()
    (state / "openclaw.json").write_text("{\n  // my model\n  agents: {},\n}\n", "utf-8")
    before = snapshot(state)
    result = run("integrate", "openclaw", "-w", str(workspace))
    assert result.exit_code != 0 and "openclaw.json" in result.output
    assert snapshot(state) == before


def test_an_unbuilt_plugin_is_refused_with_the_build_command(
    state: Path, plugin: Path, workspace: Path
) -> None:
    (plugin / "dist" / "index.js").unlink()
    result = run("integrate", "openclaw", "-w", str(workspace))
    assert result.exit_code != 0 and "npm ci && npm run build" in result.output
    assert not state.exists()


def test_a_fresh_state_dir_is_created_and_removed(
    state: Path, plugin: Path, workspace: Path
) -> None:
    integrate(workspace)
    assert (state / "openclaw.json").is_file() and (state / ".env").is_file()
    integrate(workspace, "--remove")
    assert not state.exists()


def test_list_shows_openclaw_found_and_connected(
    state: Path, plugin: Path, workspace: Path, host_path: Callable[[str], Path]
) -> None:
    row = listed(workspace, "openclaw")
    assert not row["found"] and row["connected"] == [] and row["config_dir"] == str(state)
    integrate(workspace)
    row = listed(workspace, "openclaw")  # its state dir alone is not OpenClaw
    assert not row["found"] and row["config_dir_present"] and row["connected"] == ["user"]
    openclaw = host_path("openclaw")
    row = listed(workspace, "openclaw")
    assert row["found"] and row["program"] == str(openclaw) and row["connected"] == ["user"]
    line = list_line(workspace, "openclaw")
    assert f"found ({openclaw})" in line and "connected: user" in line
    integrate(workspace, "--remove")
    row = listed(workspace, "openclaw")
    assert row["found"] and not row["config_dir_present"] and row["connected"] == []
    assert "connected: no" in list_line(workspace, "openclaw")
