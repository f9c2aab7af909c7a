"""Version history of a workspace in a git repository of its own under ``.reme/history.git``.

The workspace may itself be a user's git checkout: reme never touches its ``.git``, branches or
index. It keeps a separate git dir with the workspace as work tree, so every pipeline run that
changes files becomes one commit that ``reme revert`` can undo.

Before a run, anything changed since the last commit is committed first (``snapshot``), so the
run's commit holds only the run's own changes and reverting it leaves other changes alone. That
snapshot is split in two: files whose content is what the journal says reme's file tools last
wrote (``reme write``, ``edit``, ``move``, ``delete``, ``frontmatter``) become a ``writes`` entry,
and everything else (edits made in an editor, by git, by a script) a ``snapshot`` entry, which
``revert`` refuses unless forced: undoing it would undo the user's own work.

A revert that would delete files needs ``confirm=True``; ``preview`` says what a revert would do.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from reme_core.errors import RemeError
from reme_core.workspace.hashing import content_hash
from reme_core.workspace.journal import Journal
from reme_core.workspace.paths import WorkspacePaths, is_internal
from reme_core.workspace.tools import MAX_FILE_BYTES, TEXT_SUFFIXES

# What the history may hold is what the note tools would serve, so a read token never sees
# through `history_show` a file that `read` refuses (a hard link to .reme/token, a .env, a binary).
_BINARY_PROBE_BYTES = 8192

AUTHOR = ["-c", "user.name=reme", "-c", "user.email=reme@localhost", "-c", "commit.gpgsign=false"]
# tool_results/ holds spilled tool outputs (reme_core.light): bulky, expiring, not memory.
EXCLUDES = ".reme/\n.git/\ntool_results/\n"

SNAPSHOT = "reme: snapshot of changes made outside reme"
"""The message of a snapshot: changes not made through reme's file tools."""
API_WRITES = "reme: writes through the API"
"""The message of the changes reme's file tools made between runs (the journal says so)."""

EntryKind = Literal["run", "memory", "writes", "snapshot", "revert", "other"]
_DIFF_TREE = ["-r", "--root", "--no-commit-id", "--no-renames", "--name-status", "-z"]
_PATHS_PER_CALL = 200  # pathspecs per git command line, well under any ARG_MAX


class HistoryError(RemeError):
    """git is missing, or a revert cannot apply cleanly (nothing is changed then)."""


def kind_of(message: str) -> EntryKind:
    """What made a history entry, from its subject line (histories written before kinds
    existed read the same way)."""
    if message.startswith("reme run "):
        return "run"
    if message.startswith("reme memory "):
        return "memory"
    if message == API_WRITES:
        return "writes"
    if message.startswith("reme: snapshot"):  # also the older "reme: snapshot before revert"
        return "snapshot"
    if message.startswith('Revert "'):
        return "revert"
    return "other"


class HistoryEntry(BaseModel):
    run: str
    """Short commit id: what ``reme revert`` takes."""
    date: str
    message: str
    kind: EntryKind = "other"
    """``run`` (a pipeline run), ``memory`` (a memory API change), ``writes`` (notes written
    through reme's file tools between runs), ``snapshot`` (changes made outside reme: reverting
    one needs ``force``), ``revert`` (an undone entry)."""
    verbs: list[str] = []
    """What the run did, one line each (``CREATE digest/wiki/x.md``), from the commit body."""
    files: list[str]


class RevertPlan(BaseModel):
    """What reverting one history entry would do to the workspace (nothing is changed)."""

    run: str
    kind: EntryKind
    message: str
    deleted: list[str] = []
    """Files the entry created: the revert deletes them."""
    modified: list[str] = []
    """Files the entry changed: the revert puts their earlier content back."""
    restored: list[str] = []
    """Files the entry deleted: the revert brings them back."""

    @property
    def files(self) -> list[str]:
        return sorted({*self.deleted, *self.modified, *self.restored})

    def describe(self) -> str:
        """Several lines: the entry, then one line per file it would change."""
        lines = [f"revert {self.run} ({self.kind}: {self.message}) would:"]
        lines += [f"  delete   {path}" for path in self.deleted]
        lines += [f"  modify   {path}" for path in self.modified]
        lines += [f"  restore  {path}" for path in self.restored]
        if len(lines) == 1:
            lines.append("  change no file")
        return "\n".join(lines)


class RevertRefusedError(HistoryError):
    """A revert was refused before anything changed; ``plan`` says what it would have done
    (``files`` lists the files it would delete), so a caller can show it and ask."""

    def __init__(self, message: str, plan: RevertPlan):
        super().__init__(message)
        self.plan = plan
        self.files = list(plan.deleted)

    @property
    def details(self) -> dict[str, object]:
        """The plan as plain data, for a JSON error."""
        return {"plan": self.plan.model_dump()}


class SnapshotRevertError(RevertRefusedError):
    """The entry is a snapshot of changes made outside reme, not a run: revert it only with
    ``force``."""


class RevertConfirmationError(RevertRefusedError):
    """The revert would delete files; it runs only with ``confirm=True`` (``--yes``)."""


class History:
    def __init__(self, root: Path, journal: Journal | None = None):
        self.root = root
        self.git_dir = root / ".reme" / "history.git"
        self.journal = journal if journal is not None else Journal(root / ".reme")

    def _git(
        self, *args: str, check: bool = True, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        if shutil.which("git") is None:
            raise HistoryError("version history needs the git command; install git")
        command = [
            "git",
            *AUTHOR,
            "--literal-pathspecs",  # a note named "*.md" or ":x" is that file, not a pattern
            f"--git-dir={self.git_dir}",
            f"--work-tree={self.root}",
            *args,
        ]
        # cwd = the work tree, so pathspecs such as "." mean the workspace.
        done = subprocess.run(
            command, cwd=self.root, capture_output=True, text=True, check=False, input=stdin
        )
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
        """Commit every change to a served file; return the short id, or None if nothing changed."""
        self.ensure()
        self._stage_served()
        return self._commit(message)

    def served_files(self) -> list[str]:
        """The workspace files the history may hold: those the note tools would read (a text
        suffix, confined, one hard link, not binary, within the size limit), outside
        ``tool_results/`` and hidden names."""
        paths = WorkspacePaths(self.root)
        served = []
        for rel in paths.iter_files(suffixes=TEXT_SUFFIXES):
            if rel.startswith("tool_results/") or paths.refusal(rel) is not None:
                continue
            try:
                with open(self.root / rel, "rb") as handle:
                    if os.fstat(handle.fileno()).st_size > MAX_FILE_BYTES:
                        continue
                    if b"\0" in handle.read(_BINARY_PROBE_BYTES):
                        continue
            except OSError:
                continue
            served.append(rel)
        return served

    def _stage_served(self) -> None:
        """Stage exactly the served files: new and changed ones added, and every tracked path
        that is gone or no longer served (a file turned into a hard link, say) dropped."""
        served = self.served_files()
        tracked = [p for p in self._git("ls-files", "-z").stdout.split("\0") if p]
        dropped = sorted(set(tracked) - set(served))
        if dropped:
            self._git(
                "rm",
                "--cached",
                "--quiet",
                "--ignore-unmatch",
                "--pathspec-from-file=-",
                "--pathspec-file-nul",
                stdin="\0".join(dropped),
            )
        if served:
            self._git(
                "add", "--pathspec-from-file=-", "--pathspec-file-nul", stdin="\0".join(served)
            )

    def snapshot(self) -> list[str]:
        """Commit what changed since the last commit, before a run or a revert: reme's own
        writes (as the journal recorded them) as one ``writes`` entry, the rest as a
        ``snapshot`` entry. Returns the short ids made (none when nothing changed)."""
        self.ensure()
        self._stage_served()
        staged = self._git("diff", "--cached", "--name-only", "--no-renames", "-z").stdout
        changed = [path for path in staged.split("\0") if path]
        if not changed:
            return []
        written = self._written_by_reme(changed)
        outside = [path for path in changed if path not in written]
        made = []
        if written:
            if outside:  # commit reme's writes alone first; the rest stays in the work tree
                for i in range(0, len(outside), _PATHS_PER_CALL):
                    self._git("reset", "--quiet", "--", *outside[i : i + _PATHS_PER_CALL])
            made.append(self._commit(API_WRITES))
            if outside:
                made.append(self.record(SNAPSHOT))
        else:
            made.append(self._commit(SNAPSHOT))
        return [run for run in made if run is not None]

    def _written_by_reme(self, paths: list[str]) -> set[str]:
        """Those of ``paths`` whose state is what reme's file tools last left: the content the
        journal's newest entry for the path wrote, or gone when that entry moved or deleted it."""
        last: dict[str, str | None] = {}  # path -> the hash reme left there (None: no file)
        for entry in self.journal.entries():
            if entry.op == "delete":
                last[entry.path] = None
            elif entry.op == "move":
                last[entry.path] = None
                if entry.to is not None:
                    last[entry.to] = entry.after_hash
            else:
                last[entry.path] = entry.after_hash
        written = set()
        for path in paths:
            if path not in last:
                continue
            file = self.root / path
            try:
                current = content_hash(file.read_bytes()) if file.is_file() else None
            except OSError:
                continue
            if current == last[path]:
                written.add(path)
        return written

    def _commit(self, message: str) -> str | None:
        """Commit what is staged; None when nothing is."""
        if self._git("diff", "--cached", "--quiet", check=False).returncode == 0:
            return None
        self._git("commit", "--quiet", "--no-verify", "-m", message)
        return self._git("rev-parse", "--short", "HEAD").stdout.strip()

    def entries(self, limit: int = 20, path: str | None = None) -> list[HistoryEntry]:
        """Newest first; with ``path`` (workspace-relative), only the entries that changed that
        file, each listing only it."""
        if not (self.git_dir / "HEAD").exists():
            return []
        if self._git("rev-parse", "--verify", "--quiet", "HEAD", check=False).returncode != 0:
            return []
        out = self._git(
            "log",
            f"-{limit}",
            "--name-only",
            "--no-renames",
            "--format=\x1e%h\x1f%cI\x1f%s\x1f%b\x1d",
            *(["--", path] if path else []),
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
                    kind=kind_of(message),
                    verbs=[line for line in body.splitlines() if line.strip()],
                    files=[f for f in files.split("\n") if f and may_hold(f)],
                )
            )
        return entries

    def _commit_of(self, run: str) -> str:
        """The full commit id of history entry ``run``, or a HistoryError."""
        if not (self.git_dir / "HEAD").exists():
            raise HistoryError(f"no run {run!r} in the history (see `reme history`)")
        found = self._git("rev-parse", "--verify", "--quiet", f"{run}^{{commit}}", check=False)
        if found.returncode != 0:
            raise HistoryError(f"no run {run!r} in the history (see `reme history`)")
        return found.stdout.strip()

    def diff(self, run: str, max_chars: int = 200_000) -> tuple[str, bool]:
        """The unified diff of what entry ``run`` changed, and whether it was cut at
        ``max_chars``."""
        commit = self._commit_of(run)
        # A history written before it was confined may hold files the note tools refuse: show
        # only the files whose names the history may hold now.
        changes = self._git("diff-tree", *_DIFF_TREE, commit).stdout.split("\0")
        shown = [path for path in changes[1::2] if path and may_hold(path)]
        if not shown:
            return "", False
        out = self._git(
            "show",
            "--format=",
            "--no-renames",
            "--no-color",
            "--no-ext-diff",
            commit,
            "--",
            *shown,
        ).stdout
        if len(out) > max_chars:
            return out[:max_chars], True
        return out, False

    def preview(self, run: str) -> RevertPlan:
        """What ``revert(run)`` would delete, modify and restore; changes nothing."""
        commit = self._commit_of(run)
        message = self._git("log", "-1", "--format=%s", commit).stdout.strip()
        changes = self._git("diff-tree", *_DIFF_TREE, commit).stdout.split("\0")
        plan = RevertPlan(run=run, kind=kind_of(message), message=message)
        for status, path in zip(changes[0::2], changes[1::2], strict=False):
            if status == "A":
                plan.deleted.append(path)
            elif status == "D":
                plan.restored.append(path)
            elif status:
                plan.modified.append(path)
        return plan

    def revert(self, run: str, *, force: bool = False, confirm: bool = False) -> list[str]:
        """Undo one recorded run as a new commit; return the files it changed back.

        A snapshot of changes made outside reme is refused unless ``force`` (reverting it would
        undo the user's own edits); a revert that deletes files is refused unless ``confirm``.
        Either refusal is a ``RevertRefusedError`` carrying the ``plan``; nothing is changed.
        """
        plan = self.preview(run)
        refused = refusal(plan, force=force, confirm=confirm)
        if refused is not None:
            raise refused
        self.snapshot()  # keep other changes out of the revert
        done = self._git("revert", "--no-edit", run, check=False)
        if done.returncode != 0:
            self._git("revert", "--abort", check=False)
            raise HistoryError(
                f"run {run} cannot be reverted cleanly (later changes touch the same lines); "
                "nothing was changed"
            )
        return plan.files


def may_hold(path: str) -> bool:
    """Whether a path's name is one the history may hold and show: a served text suffix,
    no hidden part, outside ``.reme/``, ``.git/`` and ``tool_results/``."""
    parts = path.split("/")
    if is_internal(path) or parts[0] == "tool_results":
        return False
    if any(part.startswith(".") for part in parts):
        return False
    return path.lower().endswith(TEXT_SUFFIXES)


def refusal(plan: RevertPlan, *, force: bool, confirm: bool) -> RevertRefusedError | None:
    """Why a revert with this plan must not run without more consent; None when it may."""
    if plan.kind == "snapshot" and not force:
        return SnapshotRevertError(
            f"{plan.run} is a snapshot of changes made outside reme, not a run: reverting it "
            f"would undo those edits{_deleting(plan)}; pass --force (force=True) to revert "
            "it anyway",
            plan,
        )
    if plan.deleted and not confirm:
        return RevertConfirmationError(
            f"reverting {plan.run} would delete {len(plan.deleted)} file(s): "
            f"{', '.join(plan.deleted)}; pass --yes (confirm=True) to revert",
            plan,
        )
    return None


def _deleting(plan: RevertPlan) -> str:
    if not plan.deleted:
        return ""
    return f" and delete {len(plan.deleted)} file(s): {', '.join(plan.deleted)}"
