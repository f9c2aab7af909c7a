"""``reme memory ...``: in-process on a workspace, and through a running server when one serves it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result

from reme_core.cli import RemeGroup
from reme_core.cli.memory_cmd import COMMANDS
from reme_core.server.auth import TokenStore
from reme_core.workspace.layout import init_workspace
from tests.memory.support import files_under, scripted
from tests.server.api_support import running_server


@click.group(cls=RemeGroup)
def reme() -> None:
    """The memory commands under a top-level group, as ``reme`` holds them."""


for command in COMMANDS:
    reme.add_command(command)


def run(workspace: Path, *args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(reme, [*args, "-w", str(workspace)], input=input)


def ok_json(workspace: Path, *args: str, input: str | None = None) -> Any:
    result = run(workspace, *args, "--json", input=input)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "ws"
    init_workspace(root)
    monkeypatch.setenv("REME_LOCAL", "1")  # never a server a developer happens to run
    return root


def test_the_memory_commands_in_process(workspace: Path):
    added = ok_json(
        workspace,
        "memory",
        "add",
        "Prefers dark mode.",
        "--user",
        "alice",
        "--when-to-use",
        "Choosing a theme",
        "--meta",
        "confidence=0.9",
        "--source",
        "sessions/s1.jsonl",
    )
    record = added["record"]
    assert record["metadata"] == {"confidence": 0.9} and record["sources"] == ["sessions/s1.jsonl"]
    memory_id = record["memory_id"]

    shown = run(workspace, "memory", "get", memory_id, "--user", "alice")
    assert shown.exit_code == 0 and "when to use: Choosing a theme" in shown.stdout
    assert "Prefers dark mode." in shown.stdout
    other = run(workspace, "memory", "get", memory_id, "--user", "bob")
    assert other.exit_code == 1 and "no memory" in other.stderr

    from_stdin = ok_json(workspace, "memory", "add", "--user", "alice", input="Uses zsh.\n")
    assert from_stdin["record"]["content"] == "Uses zsh."

    updated = ok_json(
        workspace,
        "memory",
        "update",
        memory_id,
        "--user",
        "alice",
        "--content",
        "Prefers dark mode everywhere.",
        "--unset-meta",
        "confidence",
    )
    assert updated["action"] == "updated" and updated["record"]["metadata"] == {}

    listing = run(workspace, "memory", "list", "--user", "alice", "--sort-key", "content")
    assert listing.exit_code == 0
    assert [line.split()[0] for line in listing.stdout.splitlines()] == [
        from_stdin["record"]["memory_id"],  # "Uses zsh." sorts after "Prefers ...", reversed
        memory_id,
    ]
    found = ok_json(workspace, "memory", "retrieve", "dark mode", "--user", "alice")
    assert [hit["record"]["memory_id"] for hit in found["hits"]] == [memory_id]
    assert ok_json(workspace, "memory", "retrieve", "dark mode", "--user", "bob")["hits"] == []

    deleted = run(workspace, "memory", "delete", memory_id, "--user", "alice")
    assert deleted.exit_code == 0 and deleted.stdout.startswith(f"deleted {memory_id}")
    emptied = ok_json(workspace, "memory", "delete-all", "--user", "alice")
    assert emptied["deleted"] == [from_stdin["record"]["memory_id"]]
    assert files_under(workspace) == []


def test_a_missing_or_double_scope_is_a_clear_error(workspace: Path):
    for args in (["memory", "delete-all"], ["memory", "list", "--user", "a", "--tool", "b"]):
        result = run(workspace, *args, "--json")
        assert result.exit_code == 1 and "Traceback" not in result.output
        error = json.loads(result.stdout)["error"]
        assert error["type"] == "WorkspaceError" and "exactly one of" in error["message"]


def test_summarize_reads_messages_from_a_file(workspace: Path, tmp_path: Path):
    messages = tmp_path / "chat.json"
    messages.write_text(
        json.dumps({"messages": [{"role": "user", "content": "grep -P is missing on macOS."}]}),
        encoding="utf-8",
    )
    model = scripted(
        tmp_path, [{"memories": [{"content": "Use grep -E; -P is missing on macOS."}]}]
    )
    result = run(
        workspace, "memory", "summarize", "--tool", "grep", "--messages", str(messages),
        "--set", model,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("1 added, 0 updated, 0 unchanged, 0 skipped")
    assert "+ " in result.stdout and "grep -E" in result.stdout
    no_model = run(workspace, "memory", "summarize", "--tool", "grep", "--messages", str(messages))
    assert no_model.exit_code == 2 and "components.llm" in no_model.stderr


def test_with_a_server_running_commands_go_through_it(tmp_path: Path):
    root = tmp_path / "served"
    init_workspace(root)
    with running_server(root):
        tokens = TokenStore(root / ".reme")
        write, read = (tokens.create(p, ["default"])[1] for p in ("write", "read"))

        def call(token: str, *args: str) -> Result:
            env = {"REME_TOKEN": token, "REME_LOCAL": ""}
            return CliRunner().invoke(reme, [*args, "-w", str(root), "--json"], env=env)

        added = call(write, "memory", "add", "Frank likes jazz.", "--user", "frank")
        assert added.exit_code == 0, added.output
        record = json.loads(added.stdout)["record"]
        assert (root / record["path"]).is_file()
        refused = call(write, "memory", "delete", record["memory_id"], "--user", "frank")
        assert refused.exit_code == 1 and "admin" in json.loads(refused.stdout)["error"]["message"]
        assert (root / record["path"]).is_file()  # the server's profile rules applied

        found = call(read, "memory", "retrieve", "jazz", "--user", "frank")
        hits = json.loads(found.stdout)["hits"]
        assert [hit["record"]["memory_id"] for hit in hits] == [record["memory_id"]]
        other = call(read, "memory", "list", "--user", "gina")
        assert json.loads(other.stdout)["records"] == []
