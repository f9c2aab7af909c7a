"""The entries of a workspace's version history: what made each (its kind, from its message),
what reverting one would do (``RevertPlan``), and when a revert needs more consent."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, computed_field

from reme_core.errors import RemeError

SNAPSHOT = "reme: snapshot of changes made outside reme"
"""The message of a snapshot: changes not made through reme's file tools."""
API_WRITES = "reme: writes through the API"
"""The message of the changes reme's file tools made between runs (the journal says so)."""
BASELINE = "reme: baseline, the workspace when its history began"
"""The message of a workspace's first commit."""
PURGE_REWRITE = "reme forget: a purged note taken out of "
"""How the entry starts that a purge records for the files pipelines keep beside the notes (the
proactive topics): its earlier versions left the history with the note, so it is part of the
purge, which cannot be undone, and reverting it is refused. (The digests' unlinking,
``reme forget --purge: unlinked ...``, is an edit of the user's notes and stays revertible.)"""
NOTHING_CHANGED = "; nothing was changed"
"""How a refused revert's message ends (left out where the reason is given before trying)."""
_WRITE_VERBS = tuple(f"reme: {op} " for op in ("write", "edit", "frontmatter", "delete", "move"))
"""How the commit of one file-tool change starts (``reme: delete digest/wiki/x.md``)."""

EntryKind = Literal["run", "memory", "writes", "snapshot", "baseline", "revert", "other"]


class HistoryError(RemeError):
    """git is missing, or a revert cannot apply cleanly (nothing is changed then)."""


def kind_of(message: str) -> EntryKind:
    """What made a history entry, from its subject line (histories written before kinds
    existed read the same way)."""
    if message.startswith("reme run "):
        return "run"
    if message.startswith("reme memory "):
        return "memory"
    if message == API_WRITES or message.startswith(_WRITE_VERBS):
        return "writes"
    if message == BASELINE:
        return "baseline"
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
    one needs ``force``), ``baseline`` (the workspace when its history began: reverting it needs
    ``force`` too), ``revert`` (an undone entry)."""
    verbs: list[str] = []
    """What the run did, one line each (``CREATE digest/wiki/x.md``), from the commit body."""
    files: list[str]

    @computed_field
    @property
    def not_revertible(self) -> str | None:
        """Why no consent lets this entry be reverted (a purge's own entry), or None: shown
        before anyone tries (the studio's history greys its Revert out with this)."""
        plan = RevertPlan(run=self.run, kind=self.kind, message=self.message, modified=self.files)
        return never_reverts(plan)


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

    refused: list[str] = []
    """Files the entry touched that the history may not hold (only in a history whose rewrite
    was cut short): a revert of it is refused."""

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


class PurgeRevertError(RevertRefusedError):
    """The entry is part of a purge (``reme forget --purge``), which cannot be undone: no
    revert of it runs, ``force`` or not."""


class RevertConfirmationError(RevertRefusedError):
    """The revert would delete files; it runs only with ``confirm=True`` (``--yes``)."""


def refusal(plan: RevertPlan, *, force: bool, confirm: bool) -> RevertRefusedError | None:
    """Why a revert with this plan must not run without more consent; None when it may."""
    if plan.message.startswith(PURGE_REWRITE):
        return PurgeRevertError(
            f"{plan.run} is part of a purge (reme forget --purge), which cannot be undone: the "
            "versions it replaced were taken out of the history with the purged note, so "
            "reverting it cannot bring them back, and would only undo the clean-up of "
            f"{', '.join(plan.files) or 'its files'}{NOTHING_CHANGED}",
            plan,
        )
    if plan.kind == "baseline" and not force:
        return SnapshotRevertError(
            f"{plan.run} is the baseline (the workspace when its history began), not a run: "
            f"reverting it would undo it{_deleting(plan)}; pass --force (force=True) to revert "
            "it anyway",
            plan,
        )
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


def never_reverts(plan: RevertPlan) -> str | None:
    """Why no consent lets this plan's entry be reverted (a purge's own entry), or None."""
    refused = refusal(plan, force=True, confirm=True)
    return None if refused is None else str(refused).removesuffix(NOTHING_CHANGED)


def _deleting(plan: RevertPlan) -> str:
    if not plan.deleted:
        return ""
    return f" and delete {len(plan.deleted)} file(s): {', '.join(plan.deleted)}"


def change_message(changed: list[str], removed: list[str], op: str | None = None) -> str:
    """The commit message of one file-tool change: ``reme: delete x``, ``reme: move a -> b``
    (links rewritten in other notes counted), else ``reme: OP x`` with the journal's ``op``
    (write, edit, frontmatter; write when unknown)."""
    others = ""
    if removed and changed:
        rest = len(changed) - 1
        others = f" (and links in {rest} other note(s))" if rest else ""
        return f"reme: move {removed[0]} -> {changed[0]}{others}"
    if removed:
        return f"reme: delete {', '.join(removed)}"
    verb = op if op in ("write", "edit", "frontmatter") else "write"
    return f"reme: {verb} {', '.join(changed)}"
