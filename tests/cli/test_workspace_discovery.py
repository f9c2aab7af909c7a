"""Which folder a command works on: -w, REME_WORKSPACE or config `workspace`, else the nearest
folder holding .reme/ from the current one up (as git finds a repository). A command outside any
workspace is refused and creates nothing; only `reme init` (and `reme serve -w DIR`) make one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from conftest import copy_example

from reme_core.cli import cli
from reme_core.server import serve

NOTE = "digest/wiki/larkspur-architecture.md"


def run(*args: str, input: str | None = None, **env: str) -> Result:
    result = CliRunner().invoke(cli, list(args), input=input, env=env or None)
    assert "Traceback" not in result.output, result.output
    return result


def tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return copy_example(tmp_path / "ws")


def test_a_command_outside_any_workspace_is_refused_and_creates_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    here = tmp_path / "somewhere"
    (here / "notes").mkdir(parents=True)
    (here / "notes/private.md").write_text("# Private\n\nhello\n", "utf-8")
    before = tree(here)
    monkeypatch.chdir(here)
    for args in (("search", "hello"), ("status",), ("index",), ("write", "a.md", "--content", "x")):
        result = run(*args)
        assert result.exit_code != 0, (args, result.output)
        assert "not in a reme workspace" in result.stderr
        assert "reme init" in result.stderr and "-w" in result.stderr
    assert tree(here) == before
    assert not (tmp_path / ".reme").exists()


def test_a_named_folder_that_is_not_a_workspace_is_refused(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    (plain / "daily").mkdir(parents=True)
    (plain / "daily/note.md").write_text("# Note\n\nhello\n", "utf-8")
    before = tree(plain)
    for result in (
        run("search", "hello", "-w", str(plain)),
        run("status", "--json", "-w", str(plain)),
        run("search", "hello", REME_WORKSPACE=str(plain)),
    ):
        assert result.exit_code != 0
        message = result.stderr or json.loads(result.stdout)["error"]["message"]
        assert "is not a reme workspace" in message and f"reme init {plain}" in message
    missing = run("search", "hello", "-w", str(tmp_path / "missing"))
    assert missing.exit_code != 0 and "does not exist" in missing.stderr
    assert tree(plain) == before
    assert not (tmp_path / "missing").exists()


def test_init_then_the_folder_is_a_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    assert run("init").exit_code == 0
    result = run("status", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["workspace"] == str(tmp_path.resolve())


def test_a_subfolder_uses_the_workspace_above_it(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sub = workspace / "digest" / "wiki"
    monkeypatch.chdir(sub)
    status = run("status", "--json")
    assert status.exit_code == 0, status.output
    assert json.loads(status.stdout)["workspace"] == str(workspace.resolve())
    assert not (sub / ".reme").exists()

    # Paths stay relative to the workspace, wherever the command runs from.
    written = run("write", "daily/2026-12-01/from-sub.md", "--content", "# Sub\n\nokapi\n")
    assert written.exit_code == 0, written.output
    assert (workspace / "daily/2026-12-01/from-sub.md").is_file()
    found = run("search", "okapi", "--json")
    assert found.exit_code == 0, found.output
    assert json.loads(found.stdout)["hits"][0]["path"] == "daily/2026-12-01/from-sub.md"
    assert list(workspace.rglob(".reme")) == [workspace / ".reme"]


def test_serve_makes_a_named_folder_a_workspace_but_not_the_current_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`reme serve -w examples/workspace` (the README's first command) serves a folder of notes
    that has no .reme/ yet; a bare `reme serve` in a folder that is not a workspace refuses."""
    served: list[Path] = []
    monkeypatch.setattr(
        serve.Server, "run", lambda self: served.append(self.registry.root("default"))
    )
    notes = tmp_path / "notes"
    copy_example(notes)
    (notes / ".reme").rmdir()
    result = run("serve", "-w", str(notes), "--port", "0")
    assert result.exit_code == 0, result.output
    assert served == [notes.resolve()]
    assert "serving it makes it one" in result.stderr

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    bare = run("serve", "--port", "0")
    assert bare.exit_code != 0 and "not in a reme workspace" in bare.stderr
    assert served == [notes.resolve()]
    assert tree(elsewhere) == []


def test_json_errors_go_to_stdout_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = run("search", "hello", "--json")
    assert result.exit_code != 0
    assert "not in a reme workspace" in json.loads(result.stdout)["error"]["message"]
    assert result.stderr == ""
    plain = run("search", "hello")
    assert plain.stdout == "" and plain.stderr.startswith("error: not in a reme workspace")


def test_search_help_describes_hybrid_search() -> None:
    text = " ".join(run("search", "--help").stdout.split())
    assert "keyword arm" not in text
    assert "Hybrid search" in text and "vector" in text
