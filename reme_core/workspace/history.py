"""Version history of a workspace in a git repository of its own under ``.reme/history.git``.

The workspace may itself be a user's git checkout: reme never touches its ``.git``, branches or
index. It keeps a separate git dir with the workspace as work tree, so every pipeline run that
changes files becomes one commit that ``reme revert`` can undo.

Before a run, anything changed by hand since the last commit is committed as a snapshot, so the
run's commit holds only the run's own changes and reverting it leaves the user's edits alone.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from pydantic import BaseModel

from reme_core.errors import RemeError

AUTHOR = ["-c", "user.name=reme", "-c", "user.email=reme@localhost", "-c", "commit.gpgsign=false"]
# tool_results/ holds spilled tool outputs (reme_core.light): bulky, expiring, not memory.
EXCLUDES = ".reme/\n.git/\ntool_results/\n"


class HistoryError(RemeError):
    """git is missing, or a revert cannot apply cleanly (nothing is changed then)."""


class HistoryEntry(BaseModel):
    run: str
    """Short commit id: what ``reme revert`` takes."""
    date: str
    message: str
    verbs: list[str] = []
    """What the run did, one line each (``CREATE digest/wiki/x.md``), from the commit body."""
    files: list[str]


class History:
    def __init__(self, root: Path):
        self.root = root
        self.git_dir = root / ".reme" / "history.git"

    def _git(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        if shutil.which("git") is None:
            raise HistoryError("version history needs the git command; install git")
        command = ["git", *AUTHOR, f"--git-dir={self.git_dir}", f"--work-tree={self.root}", *args]
        # cwd = the work tree, so pathspecs such as "." mean the workspace.
        done = subprocess.run(command, cwd=self.root, capture_output=True, text=True, check=False)
        if check and done.returncode != 0:
            raise HistoryError(
                f"git {args[0]} failed: {done.stderr.strip() or done.stdout.strip()}"
            )
        return done

    def ensure(self) -> None:
        """Create the history repository on first use (with ``.reme/`` and ``.git/`` excluded)."""
        if (self.git_dir / "HEAD").exists():
            return
        self.git_dir.parent.mkdir(parents=True, exist_ok=True)
        self._git("init", "--quiet")
        (self.git_dir / "info").mkdir(exist_ok=True)
        (self.git_dir / "info" / "exclude").write_text(EXCLUDES, encoding="utf-8")

    def record(self, message: str) -> str | None:
        """Commit every change in the workspace; return the short id, or None if nothing changed."""
        self.ensure()
        self._git("add", "--all", ".")
        if self._git("diff", "--cached", "--quiet", check=False).returncode == 0:
            return None
        self._git("commit", "--quiet", "--no-verify", "-m", message)
        return self._git("rev-parse", "--short", "HEAD").stdout.strip()

    def entries(self, limit: int = 20) -> list[HistoryEntry]:
        """Newest first."""
        if not (self.git_dir / "HEAD").exists():
            return []
        if self._git("rev-parse", "--verify", "--quiet", "HEAD", check=False).returncode != 0:
            return []
        out = self._git(
            "log", f"-{limit}", "--name-only", "--format=\x1e%h\x1f%cI\x1f%s\x1f%b\x1d"
        ).stdout
        entries = []
        for block in out.split("\x1e")[1:]:
            head, _, files = block.partition("\x1d")
            run, date, message, body = head.split("\x1f", 3)
            entries.append(
                HistoryEntry(
                    run=run,
                    date=date,
                    message=message,
                    verbs=[line for line in body.splitlines() if line.strip()],
                    files=[f for f in files.split("\n") if f],
                )
            )
        return entries

    def revert(self, run: str) -> list[str]:
        """Undo one recorded run as a new commit; return the files it changed back."""
        self.ensure()
        self.record("reme: snapshot before revert")  # keep hand edits out of the revert
        found = self._git("rev-parse", "--verify", "--quiet", f"{run}^{{commit}}", check=False)
        if found.returncode != 0:
            raise HistoryError(f"no run {run!r} in the history (see `reme history`)")
        files = self._git("show", "--name-only", "--format=", run).stdout.split()
        done = self._git("revert", "--no-edit", run, check=False)
        if done.returncode != 0:
            self._git("revert", "--abort", check=False)
            raise HistoryError(
                f"run {run} cannot be reverted cleanly (later changes touch the same lines); "
                "nothing was changed"
            )
        return files
