"""`reme integrate codex`: patches $CODEX_HOME/config.toml (the reme MCP entry, the notify program)
and $CODEX_HOME/.env (the write token) as text, keeping everything else byte for byte; a rerun
or a dry run changes nothing, and `--remove` puts every file back exactly and revokes the token.
That the real codex accepts the result (--strict-config) is tests/integrations/test_codex_host.py.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

from reme_core.integrate.codex import NOTIFY_SCRIPT
from reme_core.server.auth import TokenStore
from tests.cli import integrate_cli
from tests.cli.integrate_cli import list_line, listed, run, served_workspace, snapshot, tokens

CONFIG = """\
# my codex settings
model = "o4-mini"
notify = [
  "notify-send",   # desktop popups
  "Codex",
]

[mcp_servers.docs]
command = "docs-mcp"  # keep me

# the profile below is mine
[profiles.fast]
model = "gpt-5-mini"
"""
"""A config.toml a user had: comments, a multi-line notify, other tables."""


@pytest.fixture
def codex_home(tmp_path: Path, fake_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "codex_home"
    monkeypatch.setenv("CODEX_HOME", str(folder))
    return folder


@pytest.fixture
def workspace(tmp_path: Path, codex_home: Path) -> Path:
    return served_workspace(tmp_path)


def integrate(workspace: Path, *args: str) -> dict:
    return integrate_cli.integrate("codex", workspace, *args)


def config(codex_home: Path) -> dict:
    return tomllib.loads((codex_home / "config.toml").read_text("utf-8"))


def test_connect_writes_mcp_notify_and_a_write_token_in_env(
    codex_home: Path, workspace: Path
) -> None:
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(CONFIG, "utf-8")
    report = integrate(workspace)
    assert report["status"] == "connected" and report["profile"] == "write"
    data = config(codex_home)
    assert data["mcp_servers"]["reme"] == {
        "url": "http://127.0.0.1:2333/mcp",
        "bearer_token_env_var": "REME_TOKEN",
    }
    assert data["notify"] == [
        "python3",
        str(NOTIFY_SCRIPT),
        "--url",
        "http://127.0.0.1:2333",
        "--workspace",
        str(workspace),
        "--then",  # the user's own notify program still runs
        "notify-send",
        "Codex",
    ]
    # Everything else is as it was, comments included.
    text = (codex_home / "config.toml").read_text("utf-8")
    assert text.startswith('# my codex settings\nmodel = "o4-mini"\nnotify = ["python3", ')
    assert '[mcp_servers.docs]\ncommand = "docs-mcp"  # keep me\n' in text
    assert "# the profile below is mine\n[profiles.fast]\n" in text and "popups" not in text
    assert data["profiles"] == {"fast": {"model": "gpt-5-mini"}}
    # The secret is only in .env (0600), and it is a write token for this workspace.
    env = codex_home / ".env"
    assert env.stat().st_mode & 0o777 == 0o600
    (line,) = env.read_text("utf-8").splitlines()
    secret = line.removeprefix("REME_TOKEN=")
    principal = TokenStore(workspace / ".reme").verify(secret)
    assert principal is not None and principal.profile == "write"
    assert principal.token_id == report["token"] and principal.workspaces == {"default"}
    assert secret not in text
    admin = (workspace / ".reme/token").read_text("utf-8").strip()
    assert admin not in text and admin not in env.read_text("utf-8")
    # Every change is reported, the old notify included; no secret in the report.
    keys = {(c["file"].rsplit("/", 1)[-1], c["key"]) for c in report["changes"]}
    assert keys == {
        ("config.toml", "mcp_servers.reme"),
        ("config.toml", "notify"),
        (".env", "REME_TOKEN"),
    }
    old_notify = next(c["old"] for c in report["changes"] if c["key"] == "notify")
    assert old_notify == ["notify-send", "Codex"]
    assert secret not in json.dumps(report)
    # A rerun keeps passing the user's program on, once.
    assert integrate(workspace)["status"] == "already connected"


def test_rerun_and_dry_run_change_nothing(codex_home: Path, workspace: Path) -> None:
    dry = integrate(workspace, "--dry-run")
    assert dry["status"] == "would connect" and len(dry["changes"]) == 3
    assert not codex_home.exists() and tokens(workspace) == {
        k: v for k, v in tokens(workspace).items() if v == "admin"
    }
    first = integrate(workspace)
    before = snapshot(codex_home)
    again = integrate(workspace)
    assert again["status"] == "already connected" and again["changes"] == []
    assert again["token"] == first["token"] and snapshot(codex_home) == before
    text = run("integrate", "codex", "-w", str(workspace)).output
    assert "codex already connected (user scope)" in text


def test_remove_restores_byte_for_byte_and_revokes_the_token(
    codex_home: Path, workspace: Path
) -> None:
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(CONFIG, "utf-8")
    before = snapshot(codex_home)
    report = integrate(workspace)
    assert tokens(workspace)[report["token"]] == "write"
    removed = integrate(workspace, "--remove")
    assert removed["status"] == "removed"
    assert snapshot(codex_home) == before  # config.toml as it was; .env gone (it was not there)
    assert report["token"] not in tokens(workspace)
    assert integrate(workspace, "--remove")["status"] == "not connected"


def test_a_fresh_codex_home_is_created_and_removed(codex_home: Path, workspace: Path) -> None:
    integrate(workspace)
    assert set(config(codex_home)) == {"mcp_servers", "notify"}
    dry = integrate(workspace, "--remove", "--dry-run")
    assert codex_home.is_dir() and {c["file"] for c in dry["changes"]} >= {str(codex_home)}
    integrate(workspace, "--remove")
    assert not codex_home.exists()  # the folder reme made goes too


def test_a_created_folder_the_user_filled_is_kept(codex_home: Path, workspace: Path) -> None:
    integrate(workspace)
    (codex_home / "sessions").mkdir()
    (codex_home / "sessions" / "rollout-1.jsonl").write_text("{}\n", "utf-8")
    removed = integrate(workspace, "--remove")
    assert snapshot(codex_home) == {"sessions/rollout-1.jsonl": b"{}\n"}
    (kept,) = [c for c in removed["changes"] if c["file"] == str(codex_home)]
    assert kept["new"].startswith("(kept")


def test_remove_after_an_edit_takes_out_only_reme_keys(codex_home: Path, workspace: Path) -> None:
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(CONFIG, "utf-8")
    integrate(workspace)
    with open(codex_home / "config.toml", "a", encoding="utf-8") as fh:
        fh.write('\n[mcp_servers.later]\nurl = "http://127.0.0.1:9/mcp"\n')
    with open(codex_home / ".env", "a", encoding="utf-8") as fh:
        fh.write("OTHER=1\n")
    integrate(workspace, "--remove")
    data = config(codex_home)
    assert "reme" not in data["mcp_servers"] and data["mcp_servers"]["later"]["url"]
    assert data["notify"] == ["notify-send", "Codex"]  # the user's own program is back
    assert (codex_home / ".env").read_text("utf-8") == "OTHER=1\n"


@pytest.mark.parametrize(
    ("content", "error"),
    [
        ("model = \n", "is not valid TOML"),
        ('[mcp_servers]\nreme = { url = "http://x/mcp" }\n', "in a form reme does not edit"),
    ],
)
def test_a_config_it_cannot_edit_is_refused_and_nothing_changes(
    codex_home: Path, workspace: Path, content: str, error: str
) -> None:
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(content, "utf-8")
    before, known = snapshot(codex_home), tokens(workspace)
    result = run("integrate", "codex", "-w", str(workspace))
    assert result.exit_code != 0 and error in result.output and "nothing changed" in result.output
    assert snapshot(codex_home) == before and tokens(workspace) == known


def test_project_scope_is_refused(codex_home: Path, workspace: Path) -> None:
    result = run("integrate", "codex", "--scope", "project", "-w", str(workspace))
    assert result.exit_code != 0 and "use --scope user" in result.output
    assert not codex_home.exists()


def test_list_shows_codex_found_and_connected(
    codex_home: Path, workspace: Path, host_path: Callable[[str], Path]
) -> None:
    row = listed(workspace, "codex")
    assert not row["found"] and row["connected"] == [] and row["config_dir"] == str(codex_home)
    integrate(workspace)
    row = listed(workspace, "codex")  # $CODEX_HOME alone is not codex
    assert not row["found"] and row["config_dir_present"] and row["connected"] == ["user"]
    assert "not found" in list_line(workspace, "codex")
    codex = host_path("codex")
    assert listed(workspace, "codex")["program"] == str(codex)
    line = list_line(workspace, "codex")
    assert f"found ({codex})" in line and "connected: user" in line
    integrate(workspace, "--remove")
    row = listed(workspace, "codex")
    assert row["found"] and not row["config_dir_present"] and row["connected"] == []


def test_the_text_report_masks_the_secret(codex_home: Path, workspace: Path) -> None:
    output = run("integrate", "codex", "-w", str(workspace)).output
    secret = (codex_home / ".env").read_text("utf-8").strip().removeprefix("REME_TOKEN=")
    assert secret not in output and 'REME_TOKEN: (absent) -> "reme_****"' in output
    assert "codex connected (user scope)" in output
