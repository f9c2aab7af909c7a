"""Pipeline runs are recorded in a history of the workspace's own, and can be reverted."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import KEYWORD_ONLY_ENV

from reme_core.components import Step
from reme_core.errors import WorkspaceError
from reme_core.pipelines.engine import PipelineError
from reme_core.runtime import Reme
from reme_core.workspace import init_workspace
from reme_core.workspace.history import BASELINE, History, HistoryError
from tests.fake_llm import plugins_with


class WriteNote(Step):
    name = "write_note"

    def run(self, run, state):  # type: ignore[no-untyped-def]
        written = run.reme.files.write(state["path"], state["content"])
        return {"written": written.path}


class FailAfter(Step):
    name = "fail_after"

    def run(self, run, state):  # type: ignore[no-untyped-def]
        raise WorkspaceError("scripted failure after a write")


@pytest.fixture
def reme(tmp_path: Path) -> Iterator[Reme]:
    plugins = plugins_with(WriteNote, FailAfter)
    root = tmp_path / "ws"
    init_workspace(root)
    (root / "digest/wiki/keep.md").write_text("# Keep\n\nfirst line\n", encoding="utf-8")
    overrides = [
        "pipelines.note.steps=[{name: write_note}]",
        "pipelines.half.steps=[{name: write_note}, {name: fail_after}]",
    ]
    with Reme.open(root, plugins=plugins, env=KEYWORD_ONLY_ENV, overrides=overrides) as opened:
        opened.index()
        yield opened


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, check=True
    ).stdout


def test_a_run_that_writes_is_recorded_and_revertible(reme: Reme):
    result = reme.run("note", {"path": "daily/2026-11-29/run.md", "content": "# Run\n\nnarwhal\n"})
    assert result.history and result.history_error is None
    entries = reme.history.entries()
    assert entries[0].run == result.history
    assert entries[0].message.startswith("reme run note (path=daily/2026-11-29/run.md")
    assert entries[0].files == ["daily/2026-11-29/run.md"]
    # A hand edit after the run must survive reverting it.
    (reme.root / "digest/wiki/keep.md").write_text("# Keep\n\nedited by hand\n", encoding="utf-8")
    assert reme.revert(result.history, confirm=True) == ["daily/2026-11-29/run.md"]
    assert not (reme.root / "daily/2026-11-29/run.md").exists()
    assert "edited by hand" in (reme.root / "digest/wiki/keep.md").read_text()
    assert reme.search("narwhal").hits == []  # reindexed


def test_files_written_before_a_failing_step_are_recorded_under_the_run(reme: Reme):
    with pytest.raises(PipelineError, match="fail_after"):
        reme.run("half", {"path": "daily/2026-11-29/half.md", "content": "# Half\n"})
    entry = reme.history.entries()[0]
    assert entry.message.startswith("reme run half (")
    assert entry.verbs == ["FAILED at fail_after"]
    assert entry.files == ["daily/2026-11-29/half.md"]


def test_structured_params_are_summarised_not_echoed_or_committed(reme: Reme):
    messages = [{"role": "user", "content": "password=hunter2"}]
    result = reme.run(
        "note", {"path": "daily/2026-11-29/p.md", "content": "# P\n", "messages": messages}
    )
    assert result.params["messages"] == "[1 items]"
    entry = reme.history.entries()[0]
    assert "messages=[1 items]" in entry.message and "hunter2" not in entry.message


def test_a_run_that_changes_nothing_records_nothing(reme: Reme):
    result = reme.run("search", {"query": "keep"})
    assert result.history is None
    # Only the baseline (the files there before the run), no entry for the run itself.
    assert [e.message for e in reme.history.entries()] == [BASELINE]


def test_users_own_git_repository_is_untouched(reme: Reme):
    root = reme.root
    git(root, "init", "--quiet")
    git(root, "-c", "user.name=u", "-c", "user.email=u@x", "add", "digest")
    git(root, "-c", "user.name=u", "-c", "user.email=u@x", "commit", "--quiet", "-m", "mine")
    head = git(root, "rev-parse", "HEAD")
    result = reme.run("note", {"path": "digest/wiki/new.md", "content": "# New\n"})
    assert result.history
    assert git(root, "rev-parse", "HEAD") == head
    assert git(root, "log", "--format=%s") == "mine\n"
    assert "?? digest/wiki/new.md" in git(root, "status", "--porcelain")


def test_conflicting_revert_changes_nothing(reme: Reme):
    result = reme.run("note", {"path": "digest/wiki/c.md", "content": "# C\n\nfrom the run\n"})
    (reme.root / "digest/wiki/c.md").write_text("# C\n\nrewritten by hand\n", encoding="utf-8")
    with pytest.raises(HistoryError, match="cannot be reverted cleanly"):
        reme.revert(result.history, confirm=True)
    assert (reme.root / "digest/wiki/c.md").read_text() == "# C\n\nrewritten by hand\n"


def test_unknown_run_is_a_clear_error(tmp_path: Path):
    history = History(tmp_path)
    (tmp_path / "a.md").write_text("a")
    assert history.record("first")
    with pytest.raises(HistoryError, match="no run 'deadbeef'"):
        history.revert("deadbeef")
