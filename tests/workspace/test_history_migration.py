"""A history written before it was confined (``git add --all .``) is rewritten once when opened,
so no object in it holds a refused file or an unredacted secret, and nothing else changes: the
messages, dates and served notes of every commit stay (issue 20, defect 1)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from reme_core.workspace import init_workspace
from reme_core.workspace.history import History
from reme_core.workspace.history_migration import CONFINED_KEY

TOKEN_CANARY = "reme_admintoken-canary-5b17"
ENV_SECRET = "env-canary-0c9e4f"
CREDENTIALS_CANARY = "credentials-canary-a3d8"
NOTE_SECRET = "note-secret-canary-77aa"


def git(history: History, *args: str) -> str:
    done = subprocess.run(
        ["git", f"--git-dir={history.git_dir}", f"--work-tree={history.root}", *args],
        capture_output=True,
        check=True,
        cwd=history.root,
        env={**os.environ, "GIT_AUTHOR_DATE": "2026-01-02T03:04:05Z"},
    )
    return done.stdout.decode("utf-8", "replace")


def old_commit(history: History, message: str) -> None:
    """Commit the way histories did before the confinement: the whole work tree."""
    git(history, "add", "--all", ".")
    git(history, "-c", "user.name=reme", "-c", "user.email=r@l", "commit", "-q", "-m", message)


def old_history(root: Path) -> History:
    init_workspace(root)
    (root / ".reme" / "token").write_text(TOKEN_CANARY, encoding="utf-8")
    wiki = root / "digest" / "wiki"
    (wiki / "plan.md").write_text("# Plan\nShip it.\n", encoding="utf-8")
    (wiki / "keys.md").write_text(f"# Keys\nAWS_SECRET_ACCESS_KEY={NOTE_SECRET}\n")
    history = History(root)
    history.ensure()
    git(history, "config", "--unset", CONFINED_KEY)  # as a history made before the marker
    old_commit(history, "reme: snapshot of changes made outside reme")
    os.link(root / ".reme" / "token", wiki / "t.md")
    (root / ".env").write_text(f"AWS_SECRET_ACCESS_KEY={ENV_SECRET}\n", encoding="utf-8")
    (root / "private").mkdir()
    (root / "private" / "credentials.json").write_text(CREDENTIALS_CANARY, encoding="utf-8")
    (wiki / "blob.md").write_bytes(b"\0\1binary " + CREDENTIALS_CANARY.encode())
    (wiki / "plan.md").write_text("# Plan\nShip it on Friday.\n", encoding="utf-8")
    old_commit(history, "reme run demo\n\nUPDATE digest/wiki/plan.md")
    (root / ".env").unlink()  # gone from the work tree, still in the old commit
    old_commit(history, "reme: snapshot of changes made outside reme")
    return history


def test_opening_an_old_history_rewrites_it_without_refused_content(tmp_path: Path) -> None:
    history = old_history(tmp_path / "w")
    before = git(history, "log", "--format=%s|%aI|%cI")
    assert ENV_SECRET in git(history, "cat-file", "--batch-all-objects", "--batch")

    opened = History(history.root)
    entries = opened.entries()

    objects = git(history, "cat-file", "--batch-all-objects", "--batch")
    for canary in (TOKEN_CANARY, ENV_SECRET, CREDENTIALS_CANARY, NOTE_SECRET):
        assert canary not in objects, canary
    assert "Ship it on Friday." in objects and "[REDACTED:secret]" in objects
    # Messages, authors' and committers' dates kept; the served notes' changes too.
    assert git(history, "log", "--format=%s|%aI|%cI") == before
    assert [e.files for e in entries][1] == ["digest/wiki/plan.md"]
    assert "+Ship it on Friday." in opened.diff(entries[1].run)[0]
    # Every commit's tree (the first listed whole, the later ones from their changes) holds
    # exactly the served notes.
    for commit in ("HEAD", "HEAD~1", "HEAD~2"):
        names = git(history, "ls-tree", "-r", "--name-only", commit).split()
        assert names == ["digest/wiki/keys.md", "digest/wiki/plan.md"], commit
    assert git(history, "config", "--get", CONFINED_KEY).strip() == "true"
    assert git(history, "reflog").strip() == ""
    # The index follows the rewritten branch: the next snapshot finds only real changes.
    assert opened.snapshot() == []


def test_the_rewrite_runs_once(tmp_path: Path) -> None:
    history = old_history(tmp_path / "w")
    History(history.root).entries()
    tip = git(history, "rev-parse", "HEAD")
    # A later history holding only served text is left as it is.
    History(history.root).entries()
    assert git(history, "rev-parse", "HEAD") == tip


def test_a_clean_old_history_is_left_as_it_was(tmp_path: Path) -> None:
    root = tmp_path / "w"
    init_workspace(root)
    (root / "digest" / "wiki" / "plan.md").write_text("# Plan\n", encoding="utf-8")
    history = History(root)
    history.ensure()
    git(history, "config", "--unset", CONFINED_KEY)
    git(history, "add", "digest/wiki/plan.md")  # only what the history may hold
    git(history, "-c", "user.name=reme", "-c", "user.email=r@l", "commit", "-q", "-m", "m")
    tip = git(history, "rev-parse", "HEAD")
    History(root).entries()
    assert git(history, "rev-parse", "HEAD") == tip
