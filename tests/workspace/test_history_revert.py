"""History entries say what made them, and a revert that would undo hand edits or delete files
says so first: snapshots need force, deletions need confirmation, and a dry run changes nothing."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from conftest import KEYWORD_ONLY_ENV

from reme_core.cli import cli
from reme_core.components import Step
from reme_core.runtime import Reme
from reme_core.workspace import init_workspace
from reme_core.workspace.history import (
    API_WRITES,
    SNAPSHOT,
    RevertConfirmationError,
    SnapshotRevertError,
)
from tests.fake_llm import plugins_with

PLAN = "digest/wiki/release-plan.md"


def run(workspace: Path, *args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, [*args, "--workspace", str(workspace)], input=input)


def ok(workspace: Path, *args: str, input: str | None = None) -> Result:
    result = run(workspace, *args, input=input)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result


def ok_json(workspace: Path, *args: str) -> Any:
    return json.loads(ok(workspace, *args, "--json").stdout)


def files_in(root: Path) -> dict[str, bytes]:
    """Every file of the workspace outside .reme/, with its bytes."""
    out = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".reme"]
        for name in names:
            path = Path(folder) / name
            out[str(path.relative_to(root))] = path.read_bytes()
    return out


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("REME_LOCAL", "1")  # in-process, whatever server a host may run
    root = tmp_path / "ws"
    init = CliRunner().invoke(cli, ["init", str(root)])
    assert init.exit_code == 0, init.output
    return root


def tour(root: Path) -> None:
    """The README Tour's writes, up to its read-only `reme run search`."""
    ok(root, "write", PLAN, input="# Release plan\nShip v2 after the audit.\n")
    standup = "daily/2026-11-29/standup.md"
    ok(root, "write", standup, "--content", "# Standup\nWe ship [[release-plan]] on Friday.\n")
    ok(root, "read", standup, "--start-line", "1", "--end-line", "20")
    ok(root, "edit", standup, "--old", "Friday", "--new", "Thursday")
    ok(root, "frontmatter", standup, "--field", "status=archived", "--field", "tags=[team]")
    ok(root, "move", standup, "digest/wiki/standup.md")
    ok(root, "delete", "digest/wiki/standup.md")
    ok(root, "run", "search", "--param", "query=when do we ship", "--param", "limit=3")


def entry(root: Path, kind: str) -> dict[str, Any]:
    (found,) = [e for e in ok_json(root, "history") if e["kind"] == kind]
    return found


def written(root: Path, path: str) -> dict[str, Any]:
    """The history entry of the file-tool write that created or changed ``path``."""
    (found,) = [e for e in ok_json(root, "history") if e["message"] == f"reme: write {path}"]
    return found


# -- what the history calls reme's own writes ------------------------------------------------------


def test_tour_writes_are_not_labelled_changes_made_outside_reme(workspace: Path) -> None:
    tour(workspace)
    entries = ok_json(workspace, "history")
    outside = [e for e in entries if "outside reme" in e["message"]]
    # Never a note written by `reme write`; the .gitignore `reme init` writes is not a note the
    # file tools serve, so the history does not hold it either.
    assert outside == []
    # Each write, edit, move and delete is its own entry as it happens, named after it.
    writes = written(workspace, PLAN)
    assert writes["kind"] == "writes" and writes["files"] == [PLAN]
    messages = [e["message"] for e in entries]
    assert messages[0] == "reme: delete digest/wiki/standup.md"
    assert messages[1] == "reme: move daily/2026-11-29/standup.md -> digest/wiki/standup.md"
    assert {e["kind"] for e in entries} == {"writes"}
    assert "writes" in ok(workspace, "history").stdout  # the text output shows the kind too


def test_a_snapshot_splits_reme_writes_from_hand_edits(workspace: Path) -> None:
    with Reme.open(workspace) as reme:
        reme.files.write(PLAN, "# Plan\n")  # the history's first entry
        split_in_a_batch(reme, workspace)


def split_in_a_batch(reme: Reme, workspace: Path) -> None:
    # Inside a batch (a run, say) the file tools' writes wait for the next commit.
    with reme.history.batch():
        reme.files.write("digest/wiki/api.md", "# Api\n")
        reme.files.write("digest/wiki/later-by-hand.md", "# Before\n")
        (workspace / "digest/wiki/later-by-hand.md").write_text("# Changed in an editor\n")
        (workspace / "digest/wiki/hand.md").write_text("# Hand\n")
        assert len(reme.history.snapshot()) == 2
        by_kind = {e.kind: e for e in reme.history.entries(2)}
        assert by_kind["writes"].files == ["digest/wiki/api.md"]
        assert sorted(by_kind["snapshot"].files) == [
            "digest/wiki/hand.md",
            "digest/wiki/later-by-hand.md",
        ]
        # Edits, moves and deletes through the file tools are reme's writes too.
        reme.files.edit("digest/wiki/api.md", "Api", "API")
        reme.files.move("digest/wiki/hand.md", "digest/wiki/moved.md")
        reme.files.delete("digest/wiki/later-by-hand.md")
        assert len(reme.history.snapshot()) == 1
        latest = reme.history.entries(1)[0]
        assert latest.kind == "writes" and latest.message == API_WRITES
        assert sorted(latest.files) == [
            "digest/wiki/api.md",
            "digest/wiki/hand.md",
            "digest/wiki/later-by-hand.md",
            "digest/wiki/moved.md",
        ]
        assert reme.history.snapshot() == []  # nothing left to record


# -- snapshots need --force ------------------------------------------------------------------------


def test_reverting_a_snapshot_is_refused_without_force(workspace: Path) -> None:
    ok(workspace, "write", PLAN, input="# Release plan\n")  # the history's first entry
    (workspace / "digest/wiki/hand.md").write_text("# Written in an editor\n")
    ok(workspace, "run", "search", "--param", "query=editor")
    snapshot = entry(workspace, "snapshot")
    assert snapshot["message"] == SNAPSHOT
    before = files_in(workspace)

    refused = run(workspace, "revert", snapshot["run"])
    assert refused.exit_code != 0 and "--force" in refused.stderr
    assert "digest/wiki/hand.md" in refused.stderr
    with Reme.open(workspace) as reme, pytest.raises(SnapshotRevertError) as caught:
        reme.revert(snapshot["run"], confirm=True)
    assert "digest/wiki/hand.md" in caught.value.files
    # --force still shows what it would undo and asks.
    declined = run(workspace, "revert", snapshot["run"], "--force", input="n\n")
    assert declined.exit_code != 0
    assert "delete   digest/wiki/hand.md" in declined.stderr
    assert files_in(workspace) == before

    ok(workspace, "revert", snapshot["run"], "--force", input="y\n")
    assert not (workspace / "digest/wiki/hand.md").exists()


# -- reverts that delete files ask first -----------------------------------------------------------


class WriteNote(Step):
    name = "write_note"

    def run(self, run, state):  # type: ignore[no-untyped-def]
        run.reme.files.write(state["path"], state["content"])
        return {}


@pytest.fixture
def reme(tmp_path: Path) -> Iterator[Reme]:
    root = tmp_path / "api"
    init_workspace(root)
    with Reme.open(
        root,
        plugins=plugins_with(WriteNote),
        env=KEYWORD_ONLY_ENV,
        overrides=["pipelines.note.steps=[{name: write_note}]"],
    ) as opened:
        yield opened


def test_api_revert_that_deletes_files_needs_confirm(reme: Reme) -> None:
    path = "daily/2026-11-29/run.md"
    result = reme.run("note", {"path": path, "content": "# Run\n\nnarwhal\n"})
    assert result.history
    with pytest.raises(RevertConfirmationError, match=path) as caught:
        reme.revert(result.history)
    assert caught.value.files == [path]
    assert caught.value.plan.deleted == [path]
    assert (reme.root / path).exists()
    assert reme.revert(result.history, confirm=True) == [path]
    assert not (reme.root / path).exists()
    assert reme.search("narwhal").hits == []


def test_preview_lists_deleted_modified_and_restored_files(reme: Reme) -> None:
    reme.files.write("digest/wiki/a.md", "# A\n")
    reme.files.write("digest/wiki/b.md", "# B\n")
    with reme.history.batch():  # both in one entry
        reme.files.write("digest/wiki/a.md", "# A, rewritten\n")
        reme.files.delete("digest/wiki/b.md")
    reme.history.snapshot()
    result = reme.run("note", {"path": "digest/wiki/c.md", "content": "# C\n"})
    writes = reme.history.entries()[1]
    assert writes.kind == "writes"
    plan = reme.revert_preview(writes.run)
    assert (plan.deleted, plan.modified, plan.restored) == (
        [],
        ["digest/wiki/a.md"],
        ["digest/wiki/b.md"],
    )
    assert reme.revert_preview(result.history or "").deleted == ["digest/wiki/c.md"]
    # Nothing deleted: no confirmation needed.
    assert reme.revert(writes.run) == ["digest/wiki/a.md", "digest/wiki/b.md"]
    assert (reme.root / "digest/wiki/a.md").read_text() == "# A\n"
    assert (reme.root / "digest/wiki/b.md").read_text() == "# B\n"


def test_cli_revert_asks_before_deleting(workspace: Path) -> None:
    tour(workspace)
    writes = written(workspace, PLAN)["run"]
    before = files_in(workspace)

    declined = run(workspace, "revert", writes, input="n\n")
    assert declined.exit_code != 0
    assert f"delete   {PLAN}" in declined.stderr and "Revert?" in declined.stderr
    assert files_in(workspace) == before

    reverted = ok(workspace, "revert", writes, input="y\n")
    assert PLAN in reverted.stdout
    assert not (workspace / PLAN).exists()
    assert ok_json(workspace, "search", "audit")["hits"] == []


def test_cli_revert_yes_skips_the_question(workspace: Path) -> None:
    tour(workspace)
    writes = written(workspace, PLAN)["run"]
    done = ok_json(workspace, "revert", writes, "--yes")
    assert done["deleted"] == [PLAN] and done["files"] == [PLAN]
    assert not (workspace / PLAN).exists()


def test_cli_revert_json_without_yes_fails_listing_the_files(workspace: Path) -> None:
    tour(workspace)
    writes = written(workspace, PLAN)["run"]
    before = files_in(workspace)
    refused = run(workspace, "revert", writes, "--json")
    assert refused.exit_code != 0
    error = json.loads(refused.stdout)["error"]  # JSON only: no prompt on stdout
    assert error["type"] == "RevertConfirmationError" and PLAN in error["message"]
    assert error["details"]["plan"]["deleted"] == [PLAN]
    assert files_in(workspace) == before


def test_cli_dry_run_lists_files_and_changes_nothing(workspace: Path) -> None:
    tour(workspace)
    writes = written(workspace, PLAN)["run"]
    before = files_in(workspace)
    history = ok_json(workspace, "history")
    text = ok(workspace, "revert", writes, "--dry-run")
    assert f"delete   {PLAN}" in text.stdout
    plan = ok_json(workspace, "revert", writes, "--dry-run")
    assert plan["kind"] == "writes"
    assert (plan["deleted"], plan["modified"], plan["restored"]) == ([PLAN], [], [])
    assert files_in(workspace) == before
    assert ok_json(workspace, "history") == history
