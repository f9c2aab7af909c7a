"""The pipeline step contract."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Set
from pathlib import Path
from typing import Any

from reme_core.components.base import Component


class Step(Component, ABC):
    """One step of a pipeline. Steps run in order over one shared ``state`` dict.

    ``run`` receives the open workspace (``reme_core.runtime.Reme``: files, search, index) and the
    state so far (the caller's params first), and returns the keys it adds or changes. Anything it
    returns must be JSON-serialisable (pydantic models are dumped), since results are printed.
    """

    @abstractmethod
    def run(self, run: Any, state: dict[str, Any]) -> dict[str, Any]:
        """Do the step's work; return the keys it adds or changes.

        ``run`` is a ``reme_core.pipelines.run.PipelineRun``: ``run.reme`` (the workspace),
        ``run.llm`` (this pipeline's model or None), ``run.prompts(...)``, ``run.agent(...)``,
        ``run.record(verb)`` (named in the history commit).
        """

    @classmethod
    def forget_paths(cls, state_dir: Path, paths: Set[str]) -> list[str]:
        """Drop the notes ``paths`` (being purged: ``reme forget --purge``) from this step's own
        state under ``state_dir`` (a checkpoint, a cursor); return the files changed, relative
        to ``state_dir``. A step keeping no state about notes keeps this default."""
        return []

    @classmethod
    def forget_in_workspace(
        cls, reme: Any, paths: Set[str], dry_run: bool = False
    ) -> dict[str, list[str]]:
        """Drop the notes ``paths`` (being purged) from the workspace files this step keeps
        itself, beside the notes (proactive's topics file and the note rendered from it); return
        each file changed (with ``dry_run``: that would be) with what changed in it. The purge
        calls it after the history is rewritten, as one history entry. Default: none."""
        return {}

    @classmethod
    def purged_with(cls, reme: Any, paths: Set[str]) -> dict[str, str]:
        """Files that go with the notes ``paths`` when they are purged, each with the note it
        goes with (auto_resource: a resource note's source file, which would otherwise be noted
        again). Default: none."""
        return {}

    @classmethod
    def forget_kept(cls, reme: Any, files: Mapping[str, str]) -> list[str]:
        """The files ``purged_with`` named that the user keeps (``--keep-source``), each with
        its purged note: record them so this step does not note them again; return the state
        files changed, relative to ``reme.state_dir``. Default: nothing."""
        return []
