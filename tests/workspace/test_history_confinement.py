"""The version history holds only what the note tools would serve (issue 20, defect 1): a hard
link to ``.reme/token``, a ``.env``, a credentials file or a binary never reaches a commit, and an
older history that holds such files does not show them."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from reme_core.workspace import init_workspace
from reme_core.workspace.history import History, may_hold

TOKEN_CANARY = "reme_admintoken-canary-91c2"
ENV_CANARY = "AWS_SECRET_ACCESS_KEY=env-canary-44d0"
CREDENTIALS_CANARY = "credentials-canary-7e21"


def _hostile_workspace(root: Path) -> Path:
    init_workspace(root)
    (root / ".reme" / "token").write_text(TOKEN_CANARY, encoding="utf-8")
    os.link(root / ".reme" / "token", root / "digest" / "wiki" / "t.md")
    (root / ".env").write_text(ENV_CANARY + "\n", encoding="utf-8")
    (root / "private").mkdir()
    (root / "private" / "credentials.json").write_text(CREDENTIALS_CANARY, encoding="utf-8")
    (root / "digest" / "wiki" / "blob.md").write_bytes(b"\0\1binary " + CREDENTIALS_CANARY.encode())
    (root / "digest" / "wiki" / "plan.md").write_text("# Plan\nShip it.\n", encoding="utf-8")
    return root


def _all_objects(history: History) -> str:
    done = subprocess.run(
        ["git", f"--git-dir={history.git_dir}", "cat-file", "--batch-all-objects", "--batch"],
        capture_output=True,
        check=True,
    )
    return done.stdout.decode("utf-8", "replace")


def test_a_snapshot_commits_only_served_files(tmp_path: Path) -> None:
    history = History(_hostile_workspace(tmp_path / "w"))
    assert history.snapshot()
    assert history.served_files() == ["digest/wiki/plan.md"]
    objects = _all_objects(history)
    for canary in (TOKEN_CANARY, ENV_CANARY, CREDENTIALS_CANARY):
        assert canary not in objects
    assert "Ship it." in objects
    (entry,) = history.entries()
    assert entry.files == ["digest/wiki/plan.md"]
    assert TOKEN_CANARY not in history.diff(entry.run)[0]


def test_a_file_that_becomes_a_hard_link_leaves_the_history(tmp_path: Path) -> None:
    root = tmp_path / "w"
    init_workspace(root)
    note = root / "digest" / "wiki" / "note.md"
    note.write_text("# Note\n", encoding="utf-8")
    history = History(root)
    history.snapshot()
    os.link(note, root / "resource" / "elsewhere.md")
    history.record("reme: after the link")
    tracked = subprocess.run(
        ["git", f"--git-dir={history.git_dir}", "ls-files"],
        capture_output=True,
        text=True,
        check=True,
        cwd=root,
    ).stdout.split()
    assert tracked == []


def test_an_old_history_does_not_show_refused_files(tmp_path: Path) -> None:
    root = _hostile_workspace(tmp_path / "w")
    history = History(root)
    history.ensure()
    # What the old code did: stage the whole work tree.
    subprocess.run(
        ["git", f"--git-dir={history.git_dir}", f"--work-tree={root}", "add", "--all", "."],
        check=True,
        cwd=root,
    )
    run = history._commit("reme: snapshot of changes made outside reme")
    assert run is not None
    text, _ = history.diff(run)
    assert "Ship it." in text
    for canary in (ENV_CANARY, CREDENTIALS_CANARY):
        assert canary not in text
    (entry,) = history.entries()
    assert ".env" not in entry.files and "private/credentials.json" not in entry.files


def test_names_the_history_may_hold() -> None:
    assert may_hold("digest/wiki/a.md") and may_hold("sessions/s.jsonl")
    for name in (
        ".env",
        "private/credentials.json",
        ".reme/token",
        ".git/config",
        "tool_results/x.md",
        "digest/.hidden/x.md",
        "resource/image.png",
    ):
        assert not may_hold(name), name


def test_names_the_tools_refuse_stay_out_of_the_history(tmp_path: Path) -> None:
    root = tmp_path / "w"
    init_workspace(root)
    wiki = root / "digest" / "wiki"
    (wiki / "plan.md").write_text("# Plan\n", encoding="utf-8")
    for name in ("new\nline.md", "tab\there.md", "evil\u202egnp.md"):
        (wiki / name).write_text("# Refused name\n", encoding="utf-8")
    history = History(root)
    assert history.served_files() == ["digest/wiki/plan.md"]
    history.snapshot()
    (entry,) = history.entries()
    assert entry.files == ["digest/wiki/plan.md"]
