"""The served search is a short path (issue 22, item 4): from the HTTP route's endpoint to the
keyword index's ``search`` at most ``MAX_HOPS`` functions of reme's own, counted on the real call
stack of one ``POST /api/v1/search``, so a layer added on the way fails here, naming the path.

The default ``pipelines.search`` (the shipped ``search`` step alone) is served by the engine
directly; a pipeline that does anything else still runs its steps.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from types import FrameType
from typing import Any, ClassVar

import pytest
from conftest import KEYWORD_ONLY_ENV, copy_example

import reme_core
import reme_plugins
from reme_core import hookimpl
from reme_core.runtime import Reme
from reme_core.server import routes
from reme_core.service import note_ops
from reme_core.service.operations import OPERATIONS
from reme_plugins.step_search import SearchStep
from tests.server.api_support import plugins, served

MAX_HOPS = 7
"""The route's endpoint, run_operation, Reme.serve_search (the search operation's handler),
Searcher.search, _run_arms, KeywordArm.rank, the index's search (15 when issue 22 was filed)."""
OURS = tuple(str(Path(package.__file__).parent) for package in (reme_core, reme_plugins))


def reme_frames(frame: FrameType | None) -> list[str]:
    """The qualified names of reme's own functions on the stack from ``frame`` out, outermost
    first (library frames, such as starlette's thread pool, are not hops of ours)."""
    names: list[str] = []
    while frame is not None:
        if frame.f_code.co_filename.startswith(OURS):
            names.append(frame.f_code.co_qualname)
        frame = frame.f_back
    return names[::-1]


def served_search_path(api: Any, body: dict[str, Any]) -> list[str]:
    """reme's own functions from the search route's endpoint to the keyword index's search, for
    one ``POST /api/v1/search`` of ``body``: the event loop's side (the endpoint, up to where it
    hands the call to a worker thread) and the worker's side (down to the index), both read off
    the real stacks."""
    index = type(api.registry.get("default").keyword)
    original_search = index.search
    original_hand_off = routes.run_in_threadpool
    loop_side: list[list[str]] = []
    worker_side: list[list[str]] = []

    async def hand_off(*args: Any, **kwargs: Any) -> Any:
        loop_side.append(reme_frames(sys._getframe(1)))
        return await original_hand_off(*args, **kwargs)

    def spy(self: Any, *args: Any, **kwargs: Any) -> Any:
        worker_side.append(reme_frames(sys._getframe(1)))
        return original_search(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(routes, "run_in_threadpool", hand_off)
        patch.setattr(index, "search", spy)
        answer = api.post("search", body)
    assert answer.status_code == 200 and answer.json()["hits"], answer.text
    (loop,), (worker,) = loop_side, worker_side
    # The route's own function is where the path starts (the middleware before it is transport).
    start = next(i for i, name in enumerate(loop) if name.endswith("_endpoint.<locals>.endpoint"))
    return [*loop[start:], *worker, original_search.__qualname__]


@pytest.mark.parametrize(
    "body",
    [
        {"query": "deploy", "tags": ["incident"], "expand": False},
        {"query": "deploy", "statuses": ["active", "archived"], "since": "2020-01-01"},
    ],
)
def test_an_http_search_reaches_the_keyword_index_within_the_hop_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: dict[str, Any]
) -> None:
    with served(tmp_path) as api:
        assert api.post("search", {"query": "deploy"}).status_code == 200  # opens the workspace
        path = served_search_path(api, body)
    shown = " -> ".join(path)
    assert path[0].endswith("endpoint") and path[1] == "run_operation", shown
    assert "Searcher.search" in path and "KeywordArm.rank" in path, shown
    assert len(path) <= MAX_HOPS, f"{len(path)} hops: {shown}"


def test_the_hop_count_sees_a_layer_added_on_the_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The count is read off the stack, so an adapter put back between the operation and the
    runtime (as the handler was) shows up as one more hop."""
    search = OPERATIONS["search"]

    def adapter(reme: Reme, request: Any) -> Any:
        return reme.serve_search(request)

    adapter.__code__ = adapter.__code__.replace(co_filename=note_ops.__file__)
    with served(tmp_path) as api:
        assert api.post("search", {"query": "deploy"}).status_code == 200
        before = served_search_path(api, {"query": "deploy"})
        monkeypatch.setitem(OPERATIONS, "search", dataclasses.replace(search, handler=adapter))
        after = served_search_path(api, {"query": "deploy"})
    assert len(after) == len(before) + 1 and "test_the_hop_count" in " ".join(after), after


ARCHIVED = "digest/wiki/old-hosting-heroku.md"


@pytest.mark.parametrize(
    ("extra", "body", "archived_found"),
    [
        ([], {"query": "heroku", "paths": ["digest/**"]}, False),
        (["search.statuses=[active,archived]"], {"query": "heroku", "paths": ["digest/**"]}, True),
        ([], {"query": "heroku", "paths": ["digest/**"], "statuses": ["archived"]}, True),
    ],
)
def test_the_search_input_resolves_unset_statuses_to_the_workspace_s(
    tmp_path: Path, extra: list[str], body: dict[str, Any], archived_found: bool
) -> None:
    """The input, not an adapter, types the filters: an unset ``statuses`` is the served
    workspace's ``search.statuses``."""
    with served(tmp_path, *extra) as api:
        answer = api.post("search", body)
    assert answer.status_code == 200, answer.text
    assert (ARCHIVED in {hit["path"] for hit in answer.json()["hits"]}) is archived_found


@pytest.mark.parametrize("query", ["   ", "\t\n"])
def test_a_blank_query_is_refused_once_with_the_same_error(tmp_path: Path, query: str) -> None:
    with served(tmp_path) as api:
        answer = api.post("search", {"query": query})
    assert answer.status_code == 400
    assert answer.json() == {"error": {"type": "SearchError", "message": "empty query"}}


class ForkedSearch(SearchStep):
    """A fork of the shipped step that changes nothing: it does not say ``is_engine_search``
    itself, so it is run as a step."""

    name: ClassVar[str] = "forked_search"
    runs: ClassVar[int] = 0

    def run(self, run: Any, state: dict[str, Any]) -> dict[str, Any]:
        ForkedSearch.runs += 1
        return super().run(run, state)


class Fork:
    @hookimpl
    def register_steps(self, register: Any) -> None:
        register(ForkedSearch)


@pytest.mark.parametrize(
    ("overrides", "engine_only"),
    [
        ([], True),
        (["pipelines.search.steps=[{name: forked_search}]"], False),
        (["pipelines.search.steps=[{name: search}, {name: forked_search}]"], False),
        (["pipelines.search.llm={name: scripted, settings: {path: unread.yaml}}"], False),
    ],
)
def test_only_the_shipped_step_alone_is_served_by_the_engine(
    tmp_path: Path, overrides: list[str], engine_only: bool
) -> None:
    workspace = copy_example(tmp_path / "ws")
    ForkedSearch.runs = 0
    with Reme.open(
        workspace, overrides=overrides, env=KEYWORD_ONLY_ENV, plugins=plugins(Fork())
    ) as reme:
        reme.index()
        served_hits = reme.search("deploy", limit=5)
        assert reme._search_pipeline("search").engine_only is engine_only
        engine = reme.engine_search("deploy", limit=5)
    assert served_hits.model_dump() == engine.model_dump()
    assert ForkedSearch.runs == (0 if engine_only else overrides[0].count("forked_search"))
