"""`reme integrate claude-code`: writes Claude Code's MCP entry, hooks and a write token into a
temporary HOME (or $CLAUDE_CONFIG_DIR), changes nothing on a rerun or a dry run, and `--remove`
puts every file back byte for byte and revokes the token."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from reme_core.server.auth import TokenStore
from tests.cli import integrate_cli
from tests.cli.integrate_cli import list_line, listed, run, served_workspace, snapshot, tokens

SETTINGS = '{\n    "theme": "dark",\n    "env": {"FOO": "1"},\n    "hooks": {"Stop": []}\n}\n'
"""A settings.json the user had: other keys, four-space indent, a compact inner object."""


@pytest.fixture
def home(fake_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    return fake_home


@pytest.fixture
def workspace(tmp_path: Path, home: Path) -> Path:
    return served_workspace(tmp_path)


def integrate(workspace: Path, *args: str) -> dict:
    return integrate_cli.integrate("claude-code", workspace, *args)


def test_install_writes_mcp_hooks_and_a_write_token_never_the_admin_one(
    home: Path, workspace: Path
) -> None:
    (home / ".claude").mkdir()
    (home / ".claude/settings.json").write_text(SETTINGS, "utf-8")
    report = integrate(workspace)
    assert report["status"] == "connected"
    claude_json = json.loads((home / ".claude.json").read_text("utf-8"))
    server = claude_json["mcpServers"]["reme"]
    assert server["type"] == "http" and server["url"] == "http://127.0.0.1:2333/mcp"
    settings = json.loads((home / ".claude/settings.json").read_text("utf-8"))
    secret = settings["env"]["REME_TOKEN"]
    assert server["headers"]["Authorization"] == f"Bearer {secret}"
    principal = TokenStore(workspace / ".reme").verify(secret)
    assert principal is not None and principal.profile == "write"
    assert principal.workspaces == frozenset({"default"}) and principal.token_id == report["token"]
    admin = (workspace / ".reme/token").read_text("utf-8").strip()
    for path in (home / ".claude.json", home / ".claude/settings.json"):
        assert admin not in path.read_text("utf-8")
    assert settings["theme"] == "dark" and settings["env"]["FOO"] == "1"  # unrelated keys kept
    assert settings["env"]["REME_WORKSPACE"] == str(workspace)
    for event in ("Stop", "SessionEnd"):
        (command,) = [h["command"] for group in settings["hooks"][event] for h in group["hooks"]]
        assert command.endswith('reme_stop_hook.py"') and Path(command.split('"')[1]).is_file()
    assert secret not in json.dumps(report)  # printed changes mask the secret
    assert "reme_****" in json.dumps(report["changes"])


def test_rerun_changes_nothing_and_says_already_connected(home: Path, workspace: Path) -> None:
    integrate(workspace)
    before, kept = snapshot(home), tokens(workspace)
    report = integrate(workspace)
    assert report["status"] == "already connected" and report["changes"] == []
    assert snapshot(home) == before and tokens(workspace) == kept
    text = run("integrate", "claude-code", "-w", str(workspace)).output
    assert "already connected" in text


def test_dry_run_changes_nothing(home: Path, workspace: Path) -> None:
    (home / ".claude").mkdir()
    (home / ".claude/settings.json").write_text(SETTINGS, "utf-8")
    before, kept, state = snapshot(home), tokens(workspace), snapshot(workspace / ".reme")
    report = integrate(workspace, "--dry-run")
    assert report["status"] == "would connect"
    assert {c["key"] for c in report["changes"]} >= {
        "mcpServers.reme",
        "hooks.Stop",
        "env.REME_TOKEN",
    }
    assert snapshot(home) == before and tokens(workspace) == kept
    assert snapshot(workspace / ".reme") == state


def test_remove_restores_byte_for_byte_and_revokes_the_token(home: Path, workspace: Path) -> None:
    (home / ".claude").mkdir()
    (home / ".claude/settings.json").write_text(SETTINGS, "utf-8")
    before, kept = snapshot(home), tokens(workspace)
    token = integrate(workspace)["token"]
    assert tokens(workspace)[token] == "write"
    report = integrate(workspace, "--remove")
    assert report["status"] == "removed"
    assert snapshot(home) == before  # settings.json as it was; .claude.json removed again
    assert not (home / ".claude.json").exists()
    assert token not in tokens(workspace) and tokens(workspace) == kept
    assert integrate(workspace, "--remove")["status"] == "not connected"


def test_remove_after_an_edit_takes_out_only_reme_keys(home: Path, workspace: Path) -> None:
    integrate(workspace)
    path = home / ".claude/settings.json"
    data = json.loads(path.read_text("utf-8"))
    data["model"] = "opus"  # the user edits the file after reme wrote it
    path.write_text(json.dumps(data), "utf-8")
    integrate(workspace, "--remove")
    assert json.loads(path.read_text("utf-8")) == {"model": "opus"}


def test_claude_config_dir_and_project_scope(
    home: Path, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "cc"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    integrate(workspace)
    assert (config / ".claude.json").is_file() and (config / "settings.json").is_file()
    assert not (home / ".claude.json").exists()
    report = integrate(workspace, "--scope", "project")
    assert report["status"] == "connected"
    mcp = json.loads((tmp_path / ".mcp.json").read_text("utf-8"))
    assert mcp["mcpServers"]["reme"]["headers"]["Authorization"] == "Bearer ${REME_TOKEN}"
    local = json.loads((tmp_path / ".claude/settings.local.json").read_text("utf-8"))
    assert local["env"]["REME_TOKEN"].startswith("reme_") and local["enabledMcpjsonServers"] == [
        "reme"
    ]
    assert "REME_TOKEN" not in (tmp_path / ".claude/settings.json").read_text("utf-8")
    integrate(workspace, "--scope", "project", "--remove")
    assert (
        not (tmp_path / ".mcp.json").exists() and not (tmp_path / ".claude/settings.json").exists()
    )


def test_list_shows_hosts_found_and_connected(
    home: Path, workspace: Path, host_path: Callable[[str], Path]
) -> None:
    row = listed(workspace, "claude-code")
    assert not row["found"] and row["connected"] == [] and not row["config_dir_present"]
    integrate(workspace)
    row = listed(workspace, "claude-code")  # its folder alone is not the program
    assert not row["found"] and row["config_dir_present"] and row["connected"] == ["user"]
    claude = host_path("claude")
    row = listed(workspace, "claude-code")
    assert row["found"] and row["program"] == str(claude) and row["connected"] == ["user"]
    line = list_line(workspace, "claude-code")
    assert f"found ({claude})" in line and "connected: user" in line
    integrate(workspace, "--remove")
    row = listed(workspace, "claude-code")
    assert row["found"] and not row["config_dir_present"] and row["connected"] == []


def test_remove_deletes_the_folders_it_created(home: Path, workspace: Path) -> None:
    integrate(workspace)
    assert (home / ".claude/settings.json").is_file()
    removed = integrate(workspace, "--remove")
    assert not (home / ".claude").exists() and snapshot(home) == {}
    assert {
        "file": str(home / ".claude"),
        "key": "",
        "old": "(folder created by reme)",
        "new": "(removed: it did not exist before)",
    } in removed["changes"]


def test_unknown_host_lists_the_known_ones(workspace: Path) -> None:
    result = run("integrate", "vim", "-w", str(workspace))
    assert result.exit_code != 0 and "unknown host 'vim'" in result.output
    assert "claude-code" in result.output


def test_malformed_host_config_is_refused_and_nothing_changes(home: Path, workspace: Path) -> None:
    (home / ".claude").mkdir()
    (home / ".claude/settings.json").write_text('{"env": {', "utf-8")
    before, kept = snapshot(home), tokens(workspace)
    result = run("integrate", "claude-code", "-w", str(workspace))
    assert result.exit_code != 0 and "settings.json is not valid JSON" in result.output
    assert snapshot(home) == before and tokens(workspace) == kept
    assert not (workspace / ".reme/integrations").exists()


def test_no_token_store_is_a_clear_error(home: Path, tmp_path: Path) -> None:
    root = tmp_path / "fresh"
    assert run("init", str(root)).exit_code == 0
    result = run("integrate", "claude-code", "-w", str(root))
    assert (
        result.exit_code != 0
        and "no token store" in result.output
        and "reme serve" in result.output
    )
    assert not (home / ".claude.json").exists()


def test_a_running_server_gives_the_url_and_workspace_name(home: Path, workspace: Path) -> None:
    from filelock import FileLock

    from reme_core.server.discovery import Discovery, now, write_discovery

    lock = FileLock(workspace / ".reme/server.lock")
    with lock:  # as `reme serve` holds it while it serves
        info = Discovery(
            url="http://127.0.0.1:4711",
            pid=1,
            started=now(),
            workspace="default",
            workspaces=["default"],
            auth=True,
            token_file=str(workspace / ".reme/token"),
        )
        write_discovery(workspace, info)
        report = integrate(workspace)
    server = json.loads((home / ".claude.json").read_text("utf-8"))["mcpServers"]["reme"]
    assert report["url"] == "http://127.0.0.1:4711" and server["url"] == "http://127.0.0.1:4711/mcp"


def test_a_token_revoked_by_hand_is_replaced_on_rerun(home: Path, workspace: Path) -> None:
    first = integrate(workspace)["token"]
    TokenStore(workspace / ".reme").revoke(first)
    report = integrate(workspace)
    assert report["status"] == "connected" and report["token"] != first
    assert tokens(workspace)[report["token"]] == "write"
    integrate(workspace, "--remove")
    assert not (home / ".claude.json").exists() and report["token"] not in tokens(workspace)
