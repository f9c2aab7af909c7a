"""Search through the configured ``search`` pipeline: the step config selects (``search``, or
``search_v2`` from reme-lme) is what gets measured.

The pipeline's steps are run in-process, without ``Reme.run``: a question changes no file, so
there is nothing for the workspace history to record, and hundreds of questions per item
should not cost two git calls each.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from reme_core.api import MAX_SEARCH_LIMIT as MAX_LIMIT
from reme_core.api import (
    ConfigError,
    PipelineRun,
    RemeError,
    SearchHit,
    SearchResponse,
    Settings,
    resolve_component,
)

if TYPE_CHECKING:
    from reme_core.api import Plugins, Reme

SEARCH_PIPELINE = "search"
MessageIds = Callable[[Sequence[SearchHit]], list[tuple[str, ...]]]
"""Hits -> the BEAM message ids each shows, in reading order (``HitMap.hit_ids``)."""

STEP_PACKAGES: dict[str, str] = {
    "search_v2": "reme-lme (pip install -e plugins/lme)",
    "beam_answer": "reme-beam (pip install -e plugins/beam)",
}
"""Steps that live in separate distributions, for an error that says what to install."""


class SearchFailed(RemeError):
    """The search pipeline ran but gave no search response."""


def check_steps(settings: Settings, plugins: Plugins, pipelines: tuple[str, ...]) -> None:
    """Fail before any item starts when a pipeline names a step no installed plugin provides."""
    registered = set(plugins.registry("step").names())
    for name in pipelines:
        pipeline = settings.pipelines.get(name)
        if pipeline is None:
            raise ConfigError(f"pipelines.{name}: not configured (the BEAM runner needs it)")
        for i, step in enumerate(pipeline.steps):
            if step.name in registered:
                continue
            where = STEP_PACKAGES.get(step.name, "the plugin that provides it")
            raise ConfigError(
                f"pipelines.{name}.steps[{i}]: step {step.name!r} is not installed; install "
                f"{where} (installed steps: {', '.join(sorted(registered))})"
            )


class PipelineSearch:
    """``search(query, limit)`` through pipeline ``pipeline``'s steps, built once per workspace."""

    def __init__(self, reme: Reme, pipeline: str = SEARCH_PIPELINE):
        config = reme.settings.pipelines.get(pipeline)
        if config is None:
            raise ConfigError(f"pipelines.{pipeline}: not configured")
        self.reme = reme
        self.pipeline = pipeline
        self.run = PipelineRun(reme=reme, name=pipeline, llm=reme.llm_for(pipeline))
        self.steps = []
        for i, selection in enumerate(config.steps):
            cls, settings = resolve_component(
                reme.plugins, "step", selection, f"pipelines.{pipeline}.steps[{i}]"
            )
            self.steps.append(cls(settings, reme.context))

    @property
    def step_names(self) -> list[str]:
        return [step.name for step in self.steps]

    def search(self, query: str, limit: int, **params: Any) -> SearchResponse:
        state: dict[str, Any] = {"query": query, "limit": limit, **params}
        for step in self.steps:
            changes = step.run(self.run, state)
            state.update(changes or {})
        response = state.get("search")
        if response is None:
            raise SearchFailed(
                f"pipeline {self.pipeline!r} ({', '.join(self.step_names)}) gave no `search` "
                "result; its last step must add `search` (a search response)"
            )
        if isinstance(response, SearchResponse):
            return response
        return SearchResponse.model_validate(response)

    def close(self) -> None:
        for step in self.steps:
            step.close()


def fetch_messages(
    search: PipelineSearch, query: str, messages: int, message_ids: MessageIds
) -> tuple[list[SearchHit], list[tuple[str, ...]]]:
    """Hits for ``query`` (with the ids each shows) that show at least ``messages`` distinct
    messages, or every hit there is.

    A hit may show no message, or only ones shown already, so ``messages`` hits are not always
    enough: the limit doubles until the hits show that many messages, the search runs out (fewer
    hits than asked for, or no more than the last call gave) or the limit reaches the search's
    maximum (``MAX_LIMIT``). Only the last call's hits count: a ranking may depend on the limit
    (candidates per arm follow it), and the last one is what a reader asking for that many gets.
    """
    limit = min(max(messages, 1), MAX_LIMIT)
    hits: list[SearchHit] = []
    while True:
        before = len(hits)
        hits = list(search.search(query, limit).hits)
        hit_ids = message_ids(hits)
        shown = len(set().union(*hit_ids))
        exhausted = len(hits) < limit or len(hits) <= before
        if shown >= messages or exhausted or limit >= MAX_LIMIT:
            return hits, hit_ids
        limit = min(limit * 2, MAX_LIMIT)
