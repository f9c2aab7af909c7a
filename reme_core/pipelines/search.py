"""The served search: the configured ``pipelines.search`` pipeline, run for one query.

Every surface that searches on behalf of a caller (``Reme.search``, hence the HTTP API, the MCP
``search`` tool, ``reme search``, ``AgentContext.memory_search`` and the server's shared-workspace
search) runs this, so a benchmark that selects another search step (``search_v2``) measures the
search agents get. The shipped ``search`` step calls the engine itself (``Reme.engine_search``).

Unlike ``reme run search`` this is a query, not a run: no history commit, no run record. Step
errors come back as the step raised them (a ``SearchError`` stays one). The pipeline must leave
a ``search`` key holding a ``SearchResponse`` (or data that validates as one); anything else is a
``ConfigError`` naming the pipeline and its steps.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from reme_core.errors import ConfigError
from reme_core.pipelines.run import PipelineRun
from reme_core.schema import SearchResponse
from reme_core.settings import resolve_component

if TYPE_CHECKING:
    from reme_core.runtime import Reme

SEARCH_PIPELINE = "search"
"""The pipeline every search surface runs (``pipelines.search``)."""
RESULT_KEY = "search"
"""The state key the pipeline's search response is left under."""

_serving: ContextVar[frozenset[int]] = ContextVar("reme_serving_search", default=frozenset())


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


def run_search_pipeline(
    reme: Reme, params: dict[str, Any], name: str = SEARCH_PIPELINE
) -> SearchResponse:
    """Run pipeline ``name``'s steps over ``params`` (the search step's state keys: ``query``,
    ``limit``, ``min_score``, ``expand``, ``paths``, ``tags``, ``tag_mode``, ``since``, ``until``,
    ``statuses``) and return the ``SearchResponse`` they leave under ``search``."""
    config = reme.settings.pipelines.get(name)
    if config is None:
        raise ConfigError(f"pipelines.{name}: not configured")
    names = [selection.name for selection in config.steps]
    described = f"pipelines.{name} ({', '.join(names) or 'no steps'})"
    state: dict[str, Any] = dict(params)
    run = PipelineRun(reme=reme, name=name, llm=reme.llm_for(name))
    producer: str | None = None
    with _guard(reme):
        for i, selection in enumerate(config.steps):
            path = f"pipelines.{name}.steps[{i}]"
            cls, settings = resolve_component(reme.plugins, "step", selection, path)
            step = cls(settings, reme.context)
            try:
                changes = step.run(run, state)
            finally:
                step.close()
            if not isinstance(changes, dict):
                raise ConfigError(
                    f"{described}: step {selection.name!r} returned "
                    f"{type(changes).__name__}, not a dict"
                )
            if RESULT_KEY in changes:
                producer = selection.name
            state.update(changes)
    return _response(state.get(RESULT_KEY), described, producer)


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
