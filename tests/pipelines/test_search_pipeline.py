"""The served search is one straight path (issue 22, item 4): the pipeline's steps are resolved
once per open workspace, the typed filters reach the engine as the caller gave them, and a blank
query is refused once, at ``Reme.search``, before any step is built or run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from conftest import KEYWORD_ONLY_ENV, copy_example

from reme_core import hookimpl
from reme_core.errors import SearchError
from reme_core.pipelines.engine import PipelineError
from reme_core.pipelines.search import REQUEST_KEY, SearchRequest
from reme_core.runtime import Reme
from reme_core.schema import SearchFilters
from reme_plugins.step_search import SearchStep
from tests.server.api_support import plugins


class CountedSearch(SearchStep):
    """The shipped search step, counting its instances and what reached it."""

    name: ClassVar[str] = "counted_search"
    built: ClassVar[int] = 0
    closed: ClassVar[int] = 0
    requests: ClassVar[list[Any]] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        CountedSearch.built += 1

    def run(self, run: Any, state: dict[str, Any]) -> dict[str, Any]:
        CountedSearch.requests.append(state.get(REQUEST_KEY))
        return super().run(run, state)

    def close(self) -> None:
        CountedSearch.closed += 1


class PerCallSearch(CountedSearch):
    """A step that keeps per-call state, so it is not shared: built (and closed) per query."""

    name: ClassVar[str] = "per_call_search"
    shareable: ClassVar[bool] = False


class Steps:
    @hookimpl
    def register_steps(self, register: Any) -> None:
        register(CountedSearch)
        register(PerCallSearch)


@pytest.fixture(autouse=True)
def _fresh_counts() -> None:
    CountedSearch.built = CountedSearch.closed = 0
    CountedSearch.requests = []


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_example(tmp_path_factory.mktemp("search-pipeline") / "ws")


def open_reme(example: Path, step: str = "counted_search") -> Reme:
    reme = Reme.open(
        example,
        overrides=[f"pipelines.search.steps=[{{name: {step}}}]"],
        env=KEYWORD_ONLY_ENV,
        plugins=plugins(Steps()),
    )
    reme.index()
    return reme


@pytest.fixture
def reme(example: Path) -> Iterator[Reme]:
    with open_reme(example) as opened:
        yield opened


def test_a_shareable_step_is_built_once_and_closed_with_the_workspace(example: Path) -> None:
    with open_reme(example) as reme:
        first = reme.search("deploy", limit=3)
        second = reme.search("deploy failed", limit=3)
        assert first.hits and second.hits
        assert (CountedSearch.built, CountedSearch.closed) == (1, 0)
    assert CountedSearch.closed == 1


def test_a_step_with_per_call_state_is_built_per_query(example: Path) -> None:
    with open_reme(example, "per_call_search") as reme:
        reme.search("deploy")
        reme.search("deploy")
        assert (CountedSearch.built, CountedSearch.closed) == (2, 2)
    assert CountedSearch.closed == 2  # nothing kept to close


def test_the_typed_filters_reach_the_engine_as_given(
    reme: Reme, monkeypatch: pytest.MonkeyPatch
) -> None:
    filters = SearchFilters(paths=["digest/**"], statuses=["active", "archived"])
    engine = reme.searcher.search
    reached: list[Any] = []

    def spy(query: str, **kwargs: Any) -> Any:
        reached.append(kwargs["filters"])
        return engine(query, **kwargs)

    monkeypatch.setattr(reme.searcher, "search", spy)
    served = reme.search("deploy", filters=filters, expand=False)
    assert served.hits and all(hit.path.startswith("digest/") for hit in served.hits)
    (request,) = CountedSearch.requests
    assert request == SearchRequest("deploy", filters=filters, expand=False)
    assert reached == [filters] and reached[0] is filters  # no dict round trip on the way


@pytest.mark.parametrize("query", ["", "   \n"])
def test_a_blank_query_is_refused_at_the_boundary_before_any_step(reme: Reme, query: str) -> None:
    with pytest.raises(SearchError, match=r"^empty query$"):
        reme.search(query)
    assert (CountedSearch.built, CountedSearch.requests) == (0, [])


def test_a_step_run_directly_still_checks_its_plain_params(reme: Reme) -> None:
    with pytest.raises(PipelineError, match="the search step needs a `query` param"):
        reme.run("search", {"query": "  "})
    assert reme.run("search", {"query": "deploy", "tags": "incident"}).outputs["search"]
