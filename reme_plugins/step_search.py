"""The `search` step: the workspace's hybrid search as a pipeline step.

Params (state keys): ``query`` (required), ``limit``, ``min_score``, ``paths``, ``tags``,
``tag_mode``, ``since``, ``until``, ``statuses``, ``expand``. Adds ``search`` (the response).
Benchmark forks (``search_v2``) register their own step under another name.

``pipelines.search`` is the search every surface serves (``Reme.search``: HTTP, MCP,
``reme search``, ``memory_search``), so a step selected there is what agents get; a step that
replaces this one must add ``search`` as a ``SearchResponse`` too. This step calls
``Reme.engine_search``, the engine without the pipeline.

Alone in ``pipelines.search`` (the default) it is not run per query at all: it says
``is_engine_search = True``, and ``Reme.serve_search`` calls the engine itself, which is all this
step's ``run`` would do with the served request (``reme_core.pipelines.search``).

Served there, the state also holds ``request``: the ``SearchRequest`` being served, its query
already checked and its filters a typed ``SearchFilters``, which this step passes on as they
are. Run as ``reme run search --param ...``, the state is plain params: the step is then their
boundary, checks the query and builds the filters from the filter keys.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, ClassVar

from pydantic import ValidationError

from reme_core.api import SearchError, SearchFilters, Step, hookimpl

FILTER_KEYS = ("paths", "tags", "tag_mode", "since", "until", "statuses")
REQUEST_KEY = "request"
"""Where the served search pipeline leaves its checked request
(``reme_core.pipelines.search.REQUEST_KEY``)."""


class SearchStep(Step):
    name: ClassVar[str] = "search"
    shareable: ClassVar[bool] = True
    """No per-call state on the instance: the served pipeline builds it once and calls it from
    concurrent searches. A subclass that keeps per-call state on ``self`` sets this False."""
    is_engine_search: ClassVar[bool] = True
    """``run`` gives exactly ``Reme.engine_search`` of the served request, so a pipeline of this
    step alone is served by the engine directly. Read from this class's own body only: a
    subclass is run as a step unless it says so itself."""

    def run(self, run: Any, state: dict[str, Any]) -> dict[str, Any]:
        reme = run.reme
        query = state.get("query")
        request = state.get(REQUEST_KEY)
        if request is not None and query == request.query:
            filters, as_of = request.filters, request.as_of  # checked, typed at the boundary
        else:
            filters, as_of = self._plain_filters(reme, query, state), _as_of(state.get("as_of"))
        # The engine itself: ``reme.search`` is the served search, which runs this pipeline.
        response = reme.engine_search(
            query,
            limit=state.get("limit"),
            min_score=state.get("min_score"),
            filters=filters,
            expand=state.get("expand"),
            as_of=as_of,
        )
        return {"search": response}

    @staticmethod
    def _plain_filters(reme: Any, query: Any, state: dict[str, Any]) -> SearchFilters:
        """Check plain params (``--param tags=x`` gives a string) and type their filters."""
        if not isinstance(query, str) or not query.strip():
            raise SearchError("the search step needs a `query` param, e.g. --param query='...'")
        given = {key: state[key] for key in FILTER_KEYS if key in state}
        given.setdefault("statuses", list(reme.settings.search.statuses))
        for key in ("paths", "tags", "statuses"):
            if isinstance(given.get(key), str):
                given[key] = [given[key]]
        try:
            return SearchFilters(**given)
        except ValidationError as exc:
            raise SearchError("; ".join(e["msg"] for e in exc.errors())) from None


def _as_of(value: Any) -> dt.date | None:
    """A plain ``as_of`` param (``--param as_of=2024-05-15``; YAML may already make it a date)."""
    if value is None or (isinstance(value, dt.date) and not isinstance(value, dt.datetime)):
        return value
    try:
        return dt.date.fromisoformat(str(value).strip())
    except ValueError:
        raise SearchError(f"as_of must be a date as YYYY-MM-DD, got {value!r}") from None


@hookimpl
def register_steps(register):
    register(SearchStep)
