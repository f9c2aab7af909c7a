"""The served search: the configured ``pipelines.search`` pipeline, run for one query.

Every surface that searches on behalf of a caller (``Reme.search`` and ``Reme.serve_search``,
hence the HTTP API, the MCP ``search`` tool, ``reme search``, ``AgentContext.memory_search`` and
the server's shared-workspace search) runs this, so a benchmark that selects another search step (``search_v2``) measures the
search agents get. The shipped ``search`` step calls the engine itself (``Reme.engine_search``).

When the pipeline is that one step and nothing else (the default), running it would only hand
the checked request on to the engine: ``SearchPipeline.engine_only`` says so, and
``Reme.serve_search`` then calls the engine itself, two layers (the pipeline and the step) fewer
per query. A step class opts in with ``is_engine_search = True`` in its own body (not
inherited: a subclass that overrides ``run``, such as a benchmark's fork, is run as a step), and
only while the pipeline has no ``llm`` of its own, which the step would never use but a run
would build.

The pipeline's steps are resolved once per open workspace (``Reme`` keeps one
``SearchPipeline`` per pipeline name and closes it on close); a step class that says it holds no
per-call state (``shareable = True``, as the shipped ``search`` step does) is also built once and
serves concurrent searches, any other is built per query as before.

Each query's state holds the plain keys (``query``, ``limit``, ``min_score``, ``expand`` and,
when filters were given, ``paths``, ``tags``, ``tag_mode``, ``since``, ``until``, ``statuses``),
which any step may read or override, and ``request``: the ``SearchRequest`` made at the
boundary (``Reme.search``, or the search operation's input resolved on the workspace), whose
query it checked as it was made and whose filters stay a typed ``SearchFilters`` all the way to
the engine.

Unlike ``reme run search`` this is a query, not a run: no history commit, no run record. Step
errors come back as the step raised them (a ``SearchError`` stays one). The pipeline must leave
a ``search`` key holding a ``SearchResponse`` (or data that validates as one); anything else is a
``ConfigError`` naming the pipeline and its steps.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from reme_core.errors import ConfigError, SearchError
from reme_core.pipelines.run import PipelineRun
from reme_core.schema import SearchFilters, SearchResponse
from reme_core.settings import resolve_component

if TYPE_CHECKING:
    from reme_core.components import ComponentSettings, Step
    from reme_core.runtime import Reme

SEARCH_PIPELINE = "search"
"""The pipeline every search surface runs (``pipelines.search``)."""
RESULT_KEY = "search"
"""The state key the pipeline's search response is left under."""
REQUEST_KEY = "request"
"""The state key holding the checked ``SearchRequest`` (the shipped step reads its filters)."""

_serving: ContextVar[frozenset[int]] = ContextVar("reme_serving_search", default=frozenset())


@dataclass(frozen=True)
class SearchRequest:
    """One served search, checked: the query is not blank (refused here, once, where the
    request is made: ``Reme.search``, the search operation's input), the filters typed."""

    query: str
    limit: int | None = None
    min_score: float | None = None
    filters: SearchFilters | None = None
    expand: bool | None = None
    as_of: dt.date | None = None

    def __post_init__(self) -> None:
        if not self.query or not self.query.strip():
            raise SearchError("empty query")

    def params(self) -> dict[str, Any]:
        """The plain state keys, as steps written against them (``search_v2``) read them."""
        params: dict[str, Any] = {"query": self.query}
        for key, value in (
            ("limit", self.limit),
            ("min_score", self.min_score),
            ("expand", self.expand),
        ):
            if value is not None:
                params[key] = value
        if self.filters is not None:
            params.update(self.filters.model_dump())
        if self.as_of is not None:
            params["as_of"] = self.as_of
        return params


def in_search_pipeline(reme: Reme) -> bool:
    """Whether this thread is inside ``reme``'s served search pipeline: a step there that calls
    ``reme.search`` gets the engine (``engine_search``), not the pipeline again."""
    return id(reme) in _serving.get()


@contextmanager
def _guard(reme: Reme) -> Iterator[None]:
    token = _serving.set(_serving.get() | {id(reme)})
    try:
        yield
    finally:
        _serving.reset(token)


@dataclass(frozen=True)
class _StepSlot:
    name: str
    cls: type[Step]
    settings: ComponentSettings
    shared: Step | None
    """The one instance of a ``shareable`` step; None: a new one per query."""


class SearchPipeline:
    """Pipeline ``name``'s steps, resolved once; ``run`` serves one query over them."""

    def __init__(self, reme: Reme, name: str = SEARCH_PIPELINE):
        config = reme.settings.pipelines.get(name)
        if config is None:
            raise ConfigError(f"pipelines.{name}: not configured")
        self.reme = reme
        self.name = name
        names = [selection.name for selection in config.steps]
        self.described = f"pipelines.{name} ({', '.join(names) or 'no steps'})"
        self._slots: list[_StepSlot] = []
        try:
            for i, selection in enumerate(config.steps):
                path = f"pipelines.{name}.steps[{i}]"
                cls, settings = resolve_component(reme.plugins, "step", selection, path)
                shared = cls(settings, reme.context) if getattr(cls, "shareable", False) else None
                self._slots.append(_StepSlot(selection.name, cls, settings, shared))
        except BaseException:
            self.close()
            raise
        self.engine_only = (
            len(self._slots) == 1
            and self._slots[0].cls.__dict__.get("is_engine_search") is True
            and config.llm is None
        )
        """Running the steps would give exactly the engine's search of the request (module
        docstring): ``Reme.search`` calls the engine itself instead of ``run``."""

    def run(self, request: SearchRequest) -> SearchResponse:
        """Run the steps over ``request`` and return the ``SearchResponse`` they leave."""
        reme = self.reme
        state: dict[str, Any] = {**request.params(), REQUEST_KEY: request}
        run = PipelineRun(reme=reme, name=self.name, llm=reme.llm_for(self.name))
        producer: str | None = None
        with _guard(reme):
            for slot in self._slots:
                step = slot.shared
                if step is None:
                    step = slot.cls(slot.settings, reme.context)
                try:
                    changes = step.run(run, state)
                finally:
                    if slot.shared is None:
                        step.close()
                if not isinstance(changes, dict):
                    raise ConfigError(
                        f"{self.described}: step {slot.name!r} returned "
                        f"{type(changes).__name__}, not a dict"
                    )
                if RESULT_KEY in changes:
                    producer = slot.name
                state.update(changes)
        return _response(state.get(RESULT_KEY), self.described, producer)

    def close(self) -> None:
        """Close the steps built once (those built per query were closed after it)."""
        for slot in self._slots:
            if slot.shared is not None:
                slot.shared.close()


def _response(value: Any, described: str, producer: str | None) -> SearchResponse:
    if isinstance(value, SearchResponse):
        return value
    if value is None:
        raise ConfigError(
            f"{described} gave no `{RESULT_KEY}` result: a search pipeline's steps must leave "
            f"a search response under `{RESULT_KEY}`, as the shipped `search` step does"
        )
    try:
        return SearchResponse.model_validate(value)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}" for e in exc.errors()[:3]
        )
        raise ConfigError(
            f"{described}: step {producer!r} left `{RESULT_KEY}` as "
            f"{type(value).__name__}, not a search response ({problems})"
        ) from None
