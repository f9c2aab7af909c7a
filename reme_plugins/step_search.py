"""The `search` step: the workspace's hybrid search as a pipeline step.

Params (state keys): ``query`` (required), ``limit``, ``min_score``, ``paths``, ``tags``,
``tag_mode``, ``since``, ``until``, ``statuses``, ``expand``. Adds ``search`` (the response).
Benchmark forks (``search_v2``) register their own step under another name.

``pipelines.search`` is the search every surface serves (``Reme.search``: HTTP, MCP,
``reme search``, ``memory_search``), so a step selected there is what agents get; a step that
replaces this one must add ``search`` as a ``SearchResponse`` too. This step calls
``Reme.engine_search``, the engine without the pipeline.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import ValidationError

from reme_core.api import SearchError, SearchFilters, Step, hookimpl

FILTER_KEYS = ("paths", "tags", "tag_mode", "since", "until", "statuses")


class SearchStep(Step):
    name: ClassVar[str] = "search"

    def run(self, run: Any, state: dict[str, Any]) -> dict[str, Any]:
        reme = run.reme
        query = state.get("query")
        if not isinstance(query, str) or not query.strip():
            raise SearchError("the search step needs a `query` param, e.g. --param query='...'")
        given = {key: state[key] for key in FILTER_KEYS if key in state}
        given.setdefault("statuses", list(reme.settings.search.statuses))
        for key in ("paths", "tags", "statuses"):  # --param tags=x gives a string
            if isinstance(given.get(key), str):
                given[key] = [given[key]]
        try:
            filters = SearchFilters(**given)
        except ValidationError as exc:
            raise SearchError("; ".join(e["msg"] for e in exc.errors())) from None
        # The engine itself: ``reme.search`` is the served search, which runs this pipeline.
        response = reme.engine_search(
            query,
            limit=state.get("limit"),
            min_score=state.get("min_score"),
            filters=filters,
            expand=state.get("expand"),
        )
        return {"search": response}


@hookimpl
def register_steps(register):
    register(SearchStep)
