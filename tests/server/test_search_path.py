"""The served search is a short path (issue 22, item 4): from the HTTP route's endpoint to the
keyword index's ``search`` at most ``MAX_HOPS`` functions of reme's own, counted on the real call
stack of one ``POST /api/v1/search``, so a layer added on the way fails here, naming the path.

The default ``pipelines.search`` (the shipped ``search`` step alone) is served by the engine
directly; a pipeline that does anything else still runs its steps.
"""

from __future__ import annotations

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
from reme_plugins.step_search import SearchStep
from tests.server.api_support import plugins, served

MAX_HOPS = 8
"""endpoint, run_operation, the operation's handler, Reme.search, Searcher.search, _run_arms,
KeywordArm.rank, the index's search (16 when issue 22 was filed, 12 before this test)."""
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


def test_an_http_search_reaches_the_keyword_index_within_the_hop_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with served(tmp_path) as api:
        assert api.post("search", {"query": "deploy"}).status_code == 200  # opens the workspace
        index = type(api.registry.get("default").keyword)
        original = index.search
        stacks: list[list[str]] = []

        def spy(self: Any, *args: Any, **kwargs: Any) -> Any:
            stacks.append(reme_frames(sys._getframe(1)))
            return original(self, *args, **kwargs)

        monkeypatch.setattr(index, "search", spy)
        answer = api.post("search", {"query": "deploy", "tags": ["incident"], "expand": False})
        assert answer.status_code == 200 and answer.json()["hits"]
    (stack,) = stacks
    # The endpoint awaits run_operation on a worker thread, so the endpoint itself is not on
    # that thread's stack: it is the first hop, the index's search the last.
    path = ["endpoint", *stack, original.__qualname__]
    assert stack[0] == "run_operation", path
    assert len(path) <= MAX_HOPS, f"{len(path)} hops: {' -> '.join(path)}"


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
