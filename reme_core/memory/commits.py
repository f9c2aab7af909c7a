"""Memory changes in the workspace's version history, one commit per call.

Like a pipeline run, a change first commits what changed since the last commit (so reverting
the memory change leaves those changes alone), then commits itself with a message
``reme history`` shows. History is a record, not a precondition: when git is missing or fails
the change stands and the result says why no commit was made.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from reme_core.memory.models import MemoryScope, Recorded
from reme_core.pipelines.locks import named_lock
from reme_core.workspace.history import HistoryError

if TYPE_CHECKING:
    from reme_core.runtime import Reme


class Change:
    """What one call changed: the verbs for the commit message, the result to report into."""

    def __init__(self, reme: Reme, scope: MemoryScope):
        self.reme = reme
        self.scope = scope
        self.verbs: list[str] = []
        self.error: str | None = None

    def commit(self, summary: str, result: Recorded) -> None:
        """Commit with ``reme memory <summary> (<scope>)`` and the verbs; fill ``result``."""
        if self.error is not None:  # the snapshot failed: git is missing or broken
            result.history_error = self.error
            return
        message = f"reme memory {summary} ({self.scope.describe()})"
        if self.verbs:
            message += "\n\n" + "\n".join(self.verbs)
        try:
            result.history = self.reme.history.record(message)
        except HistoryError as exc:
            result.history_error = str(exc)


@contextmanager
def changing(reme: Reme, scope: MemoryScope) -> Iterator[Change]:
    """Hold the scope's lock (across threads and processes: a server and a CLI) while a call
    reads, decides and writes, so two calls on one scope do not both add the same memory."""
    lock = named_lock(reme.state_dir, f"memory:{scope.memory_type}:{scope.value}")
    with lock, reme.history.batch():  # the change's own commit holds its writes
        change = Change(reme, scope)
        try:
            reme.history.snapshot()  # reme's writes and hand edits, as separate entries
        except HistoryError as exc:
            change.error = str(exc)
        yield change
