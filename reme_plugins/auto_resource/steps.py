"""The ``auto_resource`` step.

Params: ``path`` (one file in ``resource/``); without it the whole of ``resource/`` is reconciled
(new files, files whose bytes changed, renamed files, deleted files). Adds ``notes``
(``{resource, note, action}`` per note written), ``skipped`` and ``pending`` (``{path, reason}``),
``unchanged`` (a count) and ``changed`` (note paths written, added to any an earlier step listed,
for auto_tag).

Images (png, jpeg, webp, gif) go to the pipeline's model as ``image_url`` parts only when the
step's ``vision`` is on; otherwise, or without any model, they get a note from file name and EXIF
marked ``summarised: false`` that a later run with vision completes (reme_plugins.auto_resource
.image_note). Without a model text files wait in ``pending``; a run that could do nothing at all
is the ConfigError it always was.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Set
from typing import Any, ClassVar, Literal

from pydantic import Field

from reme_core.api import ComponentSettings, ConfigError, Step, hookimpl
from reme_plugins.auto_resource.claims import sources_going_with
from reme_plugins.auto_resource.forgotten import remember
from reme_plugins.auto_resource.reconcile import NO_MODEL, Limits, Reconciler, resource_path


class AutoResourceStep(Step):
    """Summarises resource files into notes, map-reduce for files larger than one prompt."""

    name: ClassVar[str] = "auto_resource"

    class Settings(ComponentSettings):
        max_prompt_tokens: int = Field(default=6000, ge=256)
        """The most tokens one prompt may carry, system message included (estimated as the
        usage accounting does); parts and partial summaries are sized to fit."""
        max_parts: int = Field(default=64, ge=1)
        """A file needing more parts than this is skipped rather than costing that many calls."""
        max_file_bytes: int = Field(default=20 * 1024 * 1024, ge=1)
        """Larger files are skipped (PDFs run larger than the index's note limit)."""
        max_key_points: int = Field(default=10, ge=0)
        lock_timeout_seconds: float = Field(default=10.0, ge=0)
        """How long to wait for another run working on the same file before leaving it
        pending."""
        mode: Literal["structured", "agentic"] = "structured"
        """structured: one structured call per file (map-reduce for large ones); agentic: the
        configured agent wrapper writes the note itself, confined to that one path, and the
        note is checked before it counts (a file longer than one prompt is skipped)."""
        agent_max_turns: int = Field(default=12, ge=1, le=200)
        vision: bool = False
        """The pipeline's model reads images (OpenAI-compatible ``image_url`` parts): png, jpeg,
        webp and gif files are sent to it and described. Off, or without a model, an image gets
        a note from its file name and EXIF marked ``summarised: false``, and nothing is sent."""
        max_image_pixels: int = Field(default=40_000_000, ge=1)
        """Larger images (width x height) are refused before they are decoded or sent."""

    settings: Settings

    @classmethod
    def purged_with(cls, reme: Any, paths: Set[str]) -> dict[str, str]:
        """A purged resource note takes its source file with it (``claims.sources_going_with``):
        left in resource/, the next run would write the note again."""
        return sources_going_with(reme.root, reme.catalog, paths)

    @classmethod
    def forget_kept(cls, reme: Any, files: Mapping[str, str]) -> list[str]:
        """Kept files of purged resource notes are listed as forgotten (``forgotten``)."""
        return remember(reme.state_dir, reme.root, files)

    def run(self, run: Any, state: dict[str, Any]) -> dict[str, Any]:
        target = state.get("path")
        # A bad path is the caller's mistake (4xx), whatever the model configuration says.
        rel = resource_path(run.reme.paths, target) if target is not None else None
        if self.settings.mode == "agentic":
            if run.reme.agent_wrapper is None:
                raise ConfigError(
                    "auto_resource mode agentic needs components.agent_wrapper (e.g. toolloop)"
                )
            llm = run.llm  # a wrapper that brings its own agent (agent_cli) needs none
        else:
            # Images are noted without a model; a text file then waits, and a run that could do
            # nothing at all says why, as before images were read.
            llm = run.llm
        limits = Limits(**self.settings.model_dump())
        reconciler = Reconciler(run, llm, limits)
        outcome = reconciler.reconcile_one(rel) if rel is not None else reconciler.reconcile_all()
        if llm is None and not outcome.notes and any(p.reason == NO_MODEL for p in outcome.pending):
            run.require_llm("auto_resource")
        result = outcome.model_dump(mode="json")
        earlier = [p for p in state.get("changed") or [] if isinstance(p, str)]
        result["changed"] = list(dict.fromkeys([*earlier, *outcome.changed]))
        return result


@hookimpl
def register_steps(register: Callable[[type[Step]], None]) -> None:
    """Register the ``auto_resource`` step."""
    register(AutoResourceStep)
