"""Answers a query through a search pipeline's steps, run directly (no history commit per query:
a benchmark asks thousands of queries of throwaway workspaces)."""

from __future__ import annotations

from typing import Any

from reme_core.api import PipelineRun, Reme, resolve_component


class Searcher:
    """``searcher(query, **params)`` -> the hits (as dicts), best first."""

    def __init__(self, reme: Reme, pipeline: str, limit: int):
        self.reme = reme
        self.pipeline = pipeline
        self.limit = limit
        self.steps = reme.settings.pipelines[pipeline].steps

    def __call__(self, query: str, **params: Any) -> list[dict[str, Any]]:
        state: dict[str, Any] = {"query": query, "limit": self.limit, "expand": False, **params}
        run = PipelineRun(reme=self.reme, name=self.pipeline, llm=None)
        for i, selection in enumerate(self.steps):
            path = f"pipelines.{self.pipeline}.steps[{i}]"
            cls, settings = resolve_component(self.reme.plugins, "step", selection, path)
            step = cls(settings, self.reme.context)
            try:
                state.update(step.run(run, state))
            finally:
                step.close()
        response = state["search"]
        return [h.model_dump() for h in response.hits]
