"""The git repository behind a workspace's version history (``.reme/history.git``).

How git is run on it (as reme, with literal pathspecs, the workspace as work tree), its creation
on first use, the one-time confinement of a history written before it was confined
(``history_migration``), and committing what is staged. ``History`` (``history``) builds on it:
what is staged, when a commit is made, and reverting one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from pathlib import Path

from reme_core.workspace.history_entries import HistoryError
from reme_core.workspace.history_migration import CONFINED_KEY, confine, git_runner
from reme_core.workspace.paths import WorkspacePaths

AUTHOR = ["-c", "user.name=reme", "-c", "user.email=reme@localhost", "-c", "commit.gpgsign=false"]
# Names as they are ("daily/café.md"), not C-quoted, in `git log --name-only`.
AUTHOR += ["-c", "core.quotePath=false"]
# tool_results/ holds spilled tool outputs (reme_core.light): bulky, expiring, not memory.
EXCLUDES = ".reme/\n.git/\ntool_results/\n"

_locks: dict[Path, threading.RLock] = {}
_locks_guard = threading.Lock()


class HistoryRepository:
    """One workspace's history repository; one lock per repository in the process."""

    def __init__(self, root: Path):
        self.root = root
        self.git_dir = root / ".reme" / "history.git"
        self._confined = False  # whether this history is known to be confined (migrated)
        with _locks_guard:  # one lock per history in the process: git's index is not shared
            self._lock = _locks.setdefault(self.git_dir.resolve(), threading.RLock())

    def _base(self) -> list[str]:
        if shutil.which("git") is None:
            raise HistoryError("version history needs the git command; install git")
        return [
            "git",
            *AUTHOR,
            "--literal-pathspecs",  # a note named "*.md" or ":x" is that file, not a pattern
            f"--git-dir={self.git_dir}",
            f"--work-tree={self.root}",
        ]

    def _git(
        self, *args: str, check: bool = True, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        # cwd = the work tree, so pathspecs such as "." mean the workspace.
        done = subprocess.run(
            [*self._base(), *args],
            cwd=self.root,
            capture_output=True,
            text=True,
            check=False,
            input=stdin,
        )
        if check and done.returncode != 0:
            raise HistoryError(
                f"git {args[0]} failed: {done.stderr.strip() or done.stdout.strip()}"
            )
        return done

    def ensure(self) -> None:
        """Create the history repository on first use (with ``.reme/`` and ``.git/`` excluded),
        or confine one written before the confinement (once)."""
        if (self.git_dir / "HEAD").exists():
            self._confine_once()
            return
        self.git_dir.parent.mkdir(parents=True, exist_ok=True)
        self._git("init", "--quiet")
        (self.git_dir / "info").mkdir(exist_ok=True)
        (self.git_dir / "info" / "exclude").write_text(EXCLUDES, encoding="utf-8")
        self._git("config", CONFINED_KEY, "true")
        self._confined = True

    def _confine_once(self) -> None:
        """Rewrite a history made before it was confined, the first time it is opened."""
        if self._confined:
            return
        with self._lock:
            if self._git("config", "--get", CONFINED_KEY, check=False).stdout.strip() != "true":
                confine(git_runner(self._base()), self._refused_now, self._state_blobs())
                self._git("config", CONFINED_KEY, "true")
            self._confined = True

    def _refused_now(self, rel: str) -> bool:
        """Whether the work tree holds ``rel`` now as a file the tools refuse (a hard link to
        ``.reme/token``, a link out): every old version of it leaves the history."""
        if not os.path.lexists(self.root / rel):
            return False
        return WorkspacePaths(self.root).refusal(rel) is not None

    def _state_blobs(self) -> frozenset[str]:
        """The blob ids of the small files in ``.reme/`` (the tokens): a commit holding one,
        under any name, held it through a link."""
        state = self.root / ".reme"
        files = [
            str(path)
            for path in state.rglob("*")
            if self.git_dir not in path.parents
            and path.is_file()
            and not path.is_symlink()
            and path.stat().st_size <= 65536
        ]
        if not files:
            return frozenset()
        out = self._git("hash-object", "--no-filters", "--stdin-paths", stdin="\n".join(files))
        return frozenset(out.stdout.split())

    def _has_head(self) -> bool:
        if not (self.git_dir / "HEAD").exists():
            return False
        return self._git("rev-parse", "--verify", "--quiet", "HEAD", check=False).returncode == 0

    def _commit(self, message: str) -> str | None:
        """Commit what is staged; None when nothing is."""
        if self._git("diff", "--cached", "--quiet", check=False).returncode == 0:
            return None
        self._git("commit", "--quiet", "--no-verify", "-m", message)
        return self._git("rev-parse", "--short", "HEAD").stdout.strip()
