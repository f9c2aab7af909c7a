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

Between runs, every change reme's file tools make (write, edit, move, delete, frontmatter) is
committed as it happens (``after_change``, from the one hook every file tool calls), so a deleted
note's text is in the history; inside a run (``batch``) the run's own commit holds them. The
first commit of a workspace is its ``baseline``. What the history holds is confined and
redacted (``reme_core.workspace.history_staging``); a history written before that is rewritten
once when opened (``reme_core.workspace.history_migration``). Running git on the history's own
repository is ``reme_core.workspace.history_repo``.
"""

from __future__ import annotations

import contextvars
import json
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from reme_core.errors import RemeError
from reme_core.workspace.hashing import content_hash
from reme_core.workspace.history_entries import (
    API_WRITES,
    BASELINE,
    SNAPSHOT,
    EntryKind,
    HistoryEntry,
    HistoryError,
    RevertConfirmationError,
    RevertPlan,
    RevertRefusedError,
    SnapshotRevertError,
    change_message,
    kind_of,
    refusal,
)
from reme_core.workspace.history_repo import HistoryRepository
from reme_core.workspace.history_staging import (
    HELD_SUFFIXES,
    history_text,
    may_hold,
    served_file,
)
from reme_core.workspace.journal import Journal
from reme_core.workspace.paths import WorkspacePaths
from reme_core.workspace.tools import TEXT_SUFFIXES

# The entries' models and the staging rules live beside this module; callers import them here.
__all__ = [
    "API_WRITES",
    "BASELINE",
    "SNAPSHOT",
    "EntryKind",
    "History",
    "HistoryEntry",
    "HistoryError",
    "RevertConfirmationError",
    "RevertPlan",
    "RevertRefusedError",
    "SnapshotRevertError",
    "kind_of",
    "may_hold",
    "refusal",
]

# Set while a run, a memory change or an approval writes: its own commit holds its changes.
_batching: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "reme_history_batch", default=False
)
_log = logging.getLogger(__name__)

_DIFF_TREE = ["-r", "--root", "--no-commit-id", "--no-renames", "--name-status", "-z"]
_PATHS_PER_CALL = 200  # pathspecs per git command line, well under any ARG_MAX


class History(HistoryRepository):
    """A workspace's version history: snapshots, one commit per run or file-tool change, and
    reverting one (see the module docstring)."""

    def __init__(self, root: Path, journal: Journal | None = None):
        super().__init__(root)
        self.journal = journal if journal is not None else Journal(root / ".reme")

    @contextmanager
    def batch(self) -> Iterator[None]:
        """While inside, file-tool changes are not committed one by one: the enclosing run,
        memory change or approval commits them as its own entry (``record``)."""
        token = _batching.set(True)
        try:
            yield
        finally:
            _batching.reset(token)

    def record(self, message: str) -> str | None:
        """Commit every change to a served file; return the short id, or None if nothing changed."""
        with self._lock:
            self.ensure()
            self._stage_served()
            return self._commit(message)

    def after_change(self, changed: list[str], removed: list[str]) -> str | None:
        """Commit one file-tool change (its written and removed paths) as its own ``writes``
        entry, unless a run is batching it; a new workspace's first commit is its baseline.
        Returns the short id, or None when nothing was committed."""
        if _batching.get():
            return None
        try:
            with self._lock:
                self.ensure()
                if not self._has_head():
                    self._baseline_without([*changed, *removed])
                self._stage_paths([*changed, *removed])
                op = self._last_op(changed[0]) if len(changed) == 1 and not removed else None
                return self._commit(change_message(changed, removed, op))
        except HistoryError as exc:
            # The change is on disk and indexed: it must not be reported as failed because git
            # is missing; the next snapshot commits it.
            _log.warning("history: could not commit %s: %s", [*changed, *removed], exc)
            return None

    def keep_before_removal(self, path: str) -> None:
        """Commit ``path`` as it is now if the history does not hold that text (it was edited
        outside reme since), so reverting its delete or move brings back what was deleted."""
        try:
            with self._lock:
                self.ensure()
                if not self._has_head():  # the baseline still holds it
                    self._stage_served()
                    self._commit(BASELINE)
                elif (held := history_text(self.root, path)) is not None:
                    blob = self._git("hash-object", "--stdin", "--no-filters", stdin=held[0])
                    if blob.stdout.strip() not in self._git("ls-tree", "HEAD", "--", path).stdout:
                        self._stage_paths([path])
                        self._commit(f"{SNAPSHOT}: {path}, kept before reme removed it")
        except HistoryError as exc:
            _log.warning("history: could not keep %s before removing it: %s", path, exc)

    def _last_op(self, path: str) -> str | None:
        """The op of the journal's newest entry, when it is about ``path`` (read from the
        file's end: the journal only grows)."""
        try:
            with open(self.journal.path, "rb") as handle:
                size = handle.seek(0, os.SEEK_END)
                handle.seek(max(0, size - 8192))
                tail = handle.read().decode("utf-8", "replace").splitlines()
        except OSError:
            return None
        for line in reversed(tail):
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            return (
                entry.get("op") if isinstance(entry, dict) and entry.get("path") == path else None
            )
        return None

    def _baseline_without(self, paths: list[str]) -> None:
        """Commit the workspace as it was before this first change: every served file but
        ``paths`` (their earlier content is gone already), as the ``baseline`` entry."""
        self._stage_served()
        self._unstage(paths)
        self._commit(BASELINE)

    def served_files(self) -> list[str]:
        """The workspace files the history may hold: those the note tools would read (a text
        suffix, confined, one hard link, not binary, within the size limit), outside
        ``tool_results/`` and hidden names."""
        paths = WorkspacePaths(self.root)
        files = paths.iter_files(suffixes=TEXT_SUFFIXES + HELD_SUFFIXES)
        return [rel for rel in files if served_file(paths, rel, walked=True)]

    def _tracked(self, paths: list[str] | None = None) -> set[str]:
        """The indexed paths (of ``paths`` only, when given: one write need not list them all)."""
        if paths is not None and len(paths) <= _PATHS_PER_CALL:
            listed = self._git("ls-files", "-z", "--", *paths).stdout
        else:
            listed = self._git("ls-files", "-z").stdout
        return {p for p in listed.split("\0") if p}

    def _stage_served(self) -> None:
        """Stage exactly the served files: new and changed ones added (redacted), and every
        tracked path that is gone or no longer served (a file turned into a hard link) dropped."""
        served = set(self.served_files())
        tracked = self._tracked()
        # Refresh the stat cache, so only files whose content differs are read and staged.
        self._git("update-index", "-q", "--refresh", check=False)
        modified = self._git("diff-files", "--name-only", "--no-renames", "-z").stdout
        candidates = (served - tracked) | ({p for p in modified.split("\0") if p} & served)
        self._stage(sorted(candidates), drop=sorted(tracked - served))

    def _stage_paths(self, paths: list[str]) -> None:
        """Stage only ``paths``: each as its file is now (redacted), or dropped when it is gone
        or not one the history may hold."""
        workspace = WorkspacePaths(self.root)
        tracked = self._tracked(paths)
        served = sorted({p for p in paths if served_file(workspace, p)})
        self._stage(served, drop=sorted({p for p in paths if p in tracked} - set(served)))

    def _stage(self, candidates: list[str], drop: list[str]) -> None:
        """Stage ``candidates`` (plain files with ``git add``, ones holding a secret as a
        redacted blob, ones not servable after all dropped) and drop ``drop``."""
        plain: list[str] = []
        redacted: list[str] = []
        gone = list(drop)
        for rel in candidates:
            held = history_text(self.root, rel)
            if held is None:
                gone.append(rel)
                continue
            text, changed = held
            # A link is staged as the text it serves, like a redacted file, never as a link.
            if not changed and not os.path.islink(self.root / rel):
                plain.append(rel)
                continue
            blob = self._git("hash-object", "-w", "--stdin", "--no-filters", stdin=text)
            redacted.append(f"100644 {blob.stdout.strip()}\t{rel}")
        self._unstage(gone)
        if plain:
            self._git(
                "add", "--pathspec-from-file=-", "--pathspec-file-nul", stdin="\0".join(plain)
            )
        if redacted:
            self._git(
                "update-index", "--add", "-z", "--index-info", stdin="\0".join(redacted) + "\0"
            )

    def _unstage(self, paths: list[str]) -> None:
        """Drop ``paths`` from the index (not from the work tree); unknown ones are skipped."""
        if paths:
            self._git("update-index", "--force-remove", "-z", "--stdin", stdin="\0".join(paths))

    def snapshot(self) -> list[str]:
        """Commit what changed since the last commit, before a run or a revert: reme's own
        writes (as the journal recorded them) as one ``writes`` entry, the rest as a
        ``snapshot`` entry (the first commit of a workspace is its ``baseline``). Returns the
        short ids made (none when nothing changed)."""
        with self._lock:
            if not self._has_head():
                made = self.record(BASELINE)
                return [made] if made is not None else []
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

    def entries(self, limit: int = 20, path: str | None = None) -> list[HistoryEntry]:
        """Newest first; with ``path`` (workspace-relative), only the entries that changed that
        file, each listing only it."""
        if not (self.git_dir / "HEAD").exists():
            return []
        if not self._has_head():
            return []
        self._confine_once()
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
        self._confine_once()
        found = self._git("rev-parse", "--verify", "--quiet", f"{run}^{{commit}}", check=False)
        if found.returncode != 0:
            raise HistoryError(f"no run {run!r} in the history (see `reme history`)")
        return found.stdout.strip()

    def diff(self, run: str, max_chars: int = 200_000) -> tuple[str, bool]:
        """The unified diff of what entry ``run`` changed, and whether it was cut at
        ``max_chars``."""
        commit = self._commit_of(run)
        # Confined when opened; the names are checked again in case a rewrite was cut short.
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
            if not may_hold(path):
                plan.refused.append(path)
            elif status == "A":
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
        self._check_writable(plan)
        with self._lock:
            self.snapshot()  # keep other changes out of the revert
            done = self._git("revert", "--no-edit", run, check=False)
            if done.returncode != 0:
                self._git("revert", "--abort", check=False)
                raise HistoryError(
                    f"run {run} cannot be reverted cleanly (later changes touch the same lines, "
                    "or a file holds text the history keeps redacted); nothing was changed"
                )
        return plan.files

    def _check_writable(self, plan: RevertPlan) -> None:
        """Refuse, before anything changes, a revert that would write a path the history may
        not hold, or write through a link (the file tools' own checks for a write)."""
        if plan.refused:
            raise HistoryError(
                f"{plan.run} touches files the history may not hold "
                f"({', '.join(plan.refused)}); nothing was changed"
            )
        paths = WorkspacePaths(self.root)
        for rel in plan.files:
            try:
                _, absolute = paths.resolve(rel, for_write=True)
            except RemeError as exc:
                raise HistoryError(f"cannot revert {plan.run}: {exc}; nothing was changed") from exc
            if os.path.islink(absolute) or (absolute.is_file() and absolute.stat().st_nlink > 1):
                raise HistoryError(
                    f"cannot revert {plan.run}: {rel} is a link, which a revert does not write "
                    "through; nothing was changed"
                )
