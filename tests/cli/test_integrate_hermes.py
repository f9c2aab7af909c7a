"""`reme integrate hermes`: writes the reme plugin folder into $HERMES_HOME/plugins/reme/, selects
it in config.yaml (kept as it was elsewhere, comments included), points it at the server in
reme.json and puts a write token in .env; a rerun or a dry run changes nothing, and `--remove`
puts every file back exactly and revokes the token. That the real Hermes loads what this writes
is tests/integrations/test_hermes_host.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from reme_core.integrate.hermes import PACKAGE_DIR
from reme_core.server.auth import TokenStore
from tests.cli import integrate_cli
from tests.cli.integrate_cli import list_line, listed, run, served_workspace, snapshot, tokens

CONFIG = """\
# my hermes settings
model:
  provider: custom   # my local model
  default: qwen3
memory:
  provider: honcho
  memory_enabled: true
"""
"""A config.yaml a user had: comments, another memory provider selected."""


@pytest.fixture
def hermes_home(tmp_path: Path, fake_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "hermes_home"
    monkeypatch.setenv("HERMES_HOME", str(folder))
    return folder


@pytest.fixture
def workspace(tmp_path: Path, hermes_home: Path) -> Path:
    return served_workspace(tmp_path)


def integrate(workspace: Path, *args: str) -> dict:
    return integrate_cli.integrate("hermes", workspace, *args)


def test_connect_writes_the_plugin_settings_provider_and_a_write_token(
    hermes_home: Path, workspace: Path
) -> None:
    hermes_home.mkdir()
    (hermes_home / "config.yaml").write_text(CONFIG, "utf-8")
    report = integrate(workspace)
    assert report["status"] == "connected" and report["profile"] == "write"
    text = (hermes_home / "config.yaml").read_text("utf-8")
    assert text == CONFIG.replace("provider: honcho", "provider: reme")  # the rest as it was
    plugin = hermes_home / "plugins" / "reme"
    init = (plugin / "__init__.py").read_text("utf-8")
    assert "MemoryProvider" in init  # what Hermes' loader looks for in a plugin folder
    assert f"sys.path.insert(0, {str(PACKAGE_DIR)!r})" in init
    compile(init, str(plugin / "__init__.py"), "exec")
    manifest = YAML(typ="safe").load((plugin / "plugin.yaml").read_text("utf-8"))
    assert manifest["name"] == "reme" and manifest["kind"] == "exclusive"
    assert json.loads((hermes_home / "reme.json").read_text("utf-8")) == {
        "mode": "http",
        "url": "http://127.0.0.1:2333",
        "workspace": str(workspace),
    }
    env = hermes_home / ".env"
    assert env.stat().st_mode & 0o777 == 0o600
    (line,) = env.read_text("utf-8").splitlines()
    secret = line.removeprefix("REME_TOKEN=")
    principal = TokenStore(workspace / ".reme").verify(secret)
    assert principal is not None and principal.profile == "write"
    assert principal.token_id == report["token"]
    admin = (workspace / ".reme/token").read_text("utf-8").strip()
    assert all(admin not in p.read_text("utf-8") for p in hermes_home.rglob("*") if p.is_file())
    old = next(c["old"] for c in report["changes"] if c["key"] == "memory.provider")
    assert old == "honcho"  # the provider it replaced is printed
    assert secret not in json.dumps(report)


def test_rerun_and_dry_run_change_nothing(hermes_home: Path, workspace: Path) -> None:
    dry = integrate(workspace, "--dry-run")
    assert dry["status"] == "would connect" and not hermes_home.exists()
    first = integrate(workspace)
    before = snapshot(hermes_home)
    again = integrate(workspace)
    assert again["status"] == "already connected" and again["changes"] == []
    assert again["token"] == first["token"] and snapshot(hermes_home) == before


def test_remove_restores_byte_for_byte_and_revokes_the_token(
    hermes_home: Path, workspace: Path
) -> None:
    hermes_home.mkdir()
    (hermes_home / "config.yaml").write_text(CONFIG, "utf-8")
    before = snapshot(hermes_home)
    report = integrate(workspace)
    assert integrate(workspace, "--remove")["status"] == "removed"
    assert snapshot(hermes_home) == before  # config.yaml as it was; reme's files gone
    assert report["token"] not in tokens(workspace)


def test_a_config_it_cannot_read_is_refused_and_nothing_changes(
    hermes_home: Path, workspace: Path
) -> None:
    hermes_home.mkdir()
    (hermes_home / "config.yaml").write_text("model: [unclosed\n", "utf-8")
    before = snapshot(hermes_home)
    result = run("integrate", "hermes", "-w", str(workspace))
    assert result.exit_code != 0 and "is not valid YAML" in result.output
    assert snapshot(hermes_home) == before


def test_a_fresh_hermes_home_is_created_and_removed(hermes_home: Path, workspace: Path) -> None:
    integrate(workspace)
    cache = hermes_home / "plugins" / "reme" / "__pycache__"
    cache.mkdir()  # Hermes imported the plugin reme wrote
    (cache / "__init__.cpython-312.pyc").write_bytes(b"\0")
    integrate(workspace, "--remove")
    assert not hermes_home.exists()


def test_a_created_folder_the_user_filled_is_kept(hermes_home: Path, workspace: Path) -> None:
    integrate(workspace)
    (hermes_home / "plugins" / "mine").mkdir()
    (hermes_home / "plugins" / "mine" / "plugin.yaml").write_text("name: mine\n", "utf-8")
    integrate(workspace, "--remove")
    assert snapshot(hermes_home) == {"plugins/mine/plugin.yaml": b"name: mine\n"}
    assert not (hermes_home / "plugins" / "reme").exists()


def test_list_shows_hermes_found_and_connected(
    hermes_home: Path, workspace: Path, host_path: Callable[[str], Path]
) -> None:
    row = listed(workspace, "hermes")
    assert not row["found"] and row["connected"] == [] and row["config_dir"] == str(hermes_home)
    integrate(workspace)
    row = listed(workspace, "hermes")  # $HERMES_HOME alone is not Hermes
    assert not row["found"] and row["config_dir_present"] and row["connected"] == ["user"]
    hermes = host_path("hermes")
    row = listed(workspace, "hermes")
    assert row["found"] and row["program"] == str(hermes) and row["connected"] == ["user"]
    line = list_line(workspace, "hermes")
    assert f"found ({hermes})" in line and "connected: user" in line
    integrate(workspace, "--remove")
    row = listed(workspace, "hermes")
    assert row["found"] and not row["config_dir_present"] and row["connected"] == []
    assert "connected: no" in list_line(workspace, "hermes")
