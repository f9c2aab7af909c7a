"""Every search surface runs the configured ``pipelines.search`` pipeline (issue 13, part 3).

A test step registered as the search pipeline tags and reverses the engine's hits, so a surface
that bypassed the pipeline (calling the engine directly) would return untagged hits in engine
order: the Python API, the HTTP route (own and shared workspaces), the MCP tool against a real
server, ``reme search`` and ``memory_search`` must all return the step's result. With reme-lme
installed, a pipeline selecting ``search_v2`` reaches MCP too.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import anyio
import httpx2
import pytest
from click.testing import CliRunner
from conftest import copy_example
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from reme_core import hookimpl
from reme_core import plugins as plugin_module
from reme_core.cli import cli
from reme_core.components import Step
from reme_core.errors import ConfigError, SearchError
from reme_core.light import AgentContext
from reme_core.plugins import Plugins
from reme_core.runtime import Reme
from reme_core.schema import SearchFilters, SearchResponse
from reme_core.server.auth import TokenStore
from reme_plugins.step_search import SearchStep
from tests.server.api_support import SHARED_NOTE, plugins, running_server, served

TAG = "[tagged] "
KEYWORD_ONLY = ["components.embedding=null", "components.file_store=null"]
TAGGED = "pipelines.search.steps=[{name: tagged_search}]"


class TaggedSearch(SearchStep):
    """The shipped search, then every hit's text tagged and the order reversed."""

    name: ClassVar[str] = "tagged_search"
    seen: ClassVar[list[dict[str, Any]]] = []
    """The state each run was given (the params that reached the step)."""

    def run(self, run: Any, state: dict[str, Any]) -> dict[str, Any]:
        TaggedSearch.seen.append(dict(state))
        response: SearchResponse = super().run(run, state)["search"]
        hits = [h.model_copy(update={"text": TAG + h.text}) for h in reversed(response.hits)]
        return {"search": response.model_copy(update={"hits": hits})}


class RecursingSearch(Step):
    """A step written against the old API: it calls ``reme.search`` itself."""

    name: ClassVar[str] = "recursing_search"

    def run(self, run: Any, state: dict[str, Any]) -> dict[str, Any]:
        response = run.reme.search(state["query"], limit=state.get("limit"))
        return {"search": response.model_copy(update={"degraded": ["recursing_search ran"]})}


class NoResultSearch(Step):
    name: ClassVar[str] = "no_result_search"

    def run(self, run: Any, state: dict[str, Any]) -> dict[str, Any]:
        return {"answer": "no search key"}


class OddResultSearch(Step):
    name: ClassVar[str] = "odd_result_search"

    def run(self, run: Any, state: dict[str, Any]) -> dict[str, Any]:
        return {"search": {"hits": 3}}


class TestSteps:
    @hookimpl
    def register_steps(self, register: Any) -> None:
        for step in (TaggedSearch, RecursingSearch, NoResultSearch, OddResultSearch):
            register(step)


def with_steps() -> Plugins:
    """The shipped plugins plus the test steps."""
    return plugins(TestSteps())


def tagged(response: dict[str, Any] | SearchResponse) -> list[bool]:
    return [text.startswith(TAG) for text in texts(response)]


def texts(response: dict[str, Any] | SearchResponse) -> list[str]:
    if isinstance(response, SearchResponse):
        return [hit.text for hit in response.hits]
    return [hit["text"] for hit in response["hits"]]


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_example(tmp_path_factory.mktemp("served-search") / "ws")


def open_reme(workspace: Path, *overrides: str) -> Reme:
    return Reme.open(workspace, overrides=[*KEYWORD_ONLY, *overrides], env={}, plugins=with_steps())


@pytest.fixture
def reme(example: Path) -> Iterator[Reme]:
    with open_reme(example, *KEYWORD_ONLY) as opened:
        opened.index()
        yield opened


# -- the Python API ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        {"query": "deploy"},
        {"query": "deploy failed", "limit": 3, "expand": False},
        {"query": "deploy", "min_score": 0.5},
        {"query": "deploy", "filters": SearchFilters(paths=["digest/**"])},
        {"query": "deploy", "filters": SearchFilters(statuses=["active", "archived"])},
    ],
)
def test_the_default_pipeline_serves_exactly_the_engine(reme: Reme, call: dict[str, Any]) -> None:
    query = call.pop("query")
    served = reme.search(query, **call)
    assert served.hits, "the example workspace has deploy notes"
    assert served.model_dump() == reme.engine_search(query, **call).model_dump()


def test_an_empty_query_is_refused_as_before(reme: Reme) -> None:
    with pytest.raises(SearchError, match="empty query"):
        reme.search("  ")


def test_the_configured_step_serves_and_gets_every_param(example: Path) -> None:
    with open_reme(example, TAGGED) as reme:
        reme.index()
        filters = SearchFilters(paths=["digest/**", "daily/**"], statuses=["active", "archived"])
        TaggedSearch.seen.clear()
        served = reme.search("deploy", limit=4, min_score=0.01, filters=filters, expand=False)
        engine = reme.engine_search(
            "deploy", limit=4, min_score=0.01, filters=filters, expand=False
        )
    assert len(served.hits) >= 2 and all(h.text.startswith(TAG) for h in served.hits)
    assert [h.chunk_id for h in served.hits] == [h.chunk_id for h in reversed(engine.hits)]
    (state,) = TaggedSearch.seen
    assert state["query"] == "deploy" and state["limit"] == 4 and state["min_score"] == 0.01
    assert state["expand"] is False
    assert state["paths"] == ["digest/**", "daily/**"]
    assert state["statuses"] == ["active", "archived"]


def test_a_step_that_calls_reme_search_gets_the_engine_not_itself(example: Path) -> None:
    with open_reme(example, "pipelines.search.steps=[{name: recursing_search}]") as reme:
        reme.index()
        served = reme.search("deploy", limit=3)
        engine = reme.engine_search("deploy", limit=3)
    assert served.degraded == ["recursing_search ran"]
    assert [h.chunk_id for h in served.hits] == [h.chunk_id for h in engine.hits]


@pytest.mark.parametrize(
    ("step", "message"),
    [
        ("no_result_search", r"pipelines\.search \(no_result_search\) gave no `search` result"),
        ("odd_result_search", r"step 'odd_result_search' left `search` as dict, not a search"),
    ],
)
def test_a_search_pipeline_without_a_search_response_is_refused(
    example: Path, step: str, message: str
) -> None:
    with (
        open_reme(example, f"pipelines.search.steps=[{{name: {step}}}]") as reme,
        pytest.raises(ConfigError, match=message),
    ):
        reme.search("deploy")


# -- HTTP, own and shared workspaces ---------------------------------------------------------


def test_the_http_route_serves_the_pipeline_in_every_workspace(tmp_path: Path) -> None:
    with served(tmp_path, TAGGED, manager=with_steps()) as api:
        TaggedSearch.seen.clear()
        body = {"query": "deploy", "limit": 5, "paths": ["digest/**"], "expand": False}
        own = api.post("search", body).json()
        assert own["hits"] and all(tagged(own))
        assert all(hit["path"].startswith("digest/") for hit in own["hits"])
        assert TaggedSearch.seen[-1]["paths"] == ["digest/**"]
        assert TaggedSearch.seen[-1]["limit"] == 5

        both = api.post(
            "search", {"query": "Tuesday deploy", "include_shared": True}, token="both_read"
        ).json()
        assert both["workspaces"] == ["default", "global"]
        shared = [hit for hit in both["hits"] if hit["workspace"] == "global"]
        assert [hit["path"] for hit in shared] == [SHARED_NOTE]
        assert all(tagged(both))  # the shared workspace's search ran the pipeline too


# -- MCP against a real server ---------------------------------------------------------------


def mcp_search(url: str, token: str, arguments: dict[str, Any]) -> Any:
    async def scenario() -> Any:
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            httpx2.AsyncClient(headers=headers) as http,
            Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client,
        ):
            return await client.call_tool("search", arguments)

    return anyio.run(scenario)


def test_the_mcp_tool_serves_the_pipeline(tmp_path: Path) -> None:
    workspace = copy_example(tmp_path / "ws")
    with running_server(workspace, TAGGED, manager=with_steps()) as server:
        _, secret = TokenStore(workspace / ".reme").create("read", ["default"])
        result = mcp_search(server.url, secret, {"query": "deploy", "limit": 3})
    assert not result.is_error, result.content
    assert result.structured_content["hits"] and all(tagged(result.structured_content))


# -- the CLI -----------------------------------------------------------------------------------


def test_reme_search_serves_the_pipeline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    workspace = copy_example(tmp_path / "ws")
    # The command loads the process's plugins: here, the test's.
    monkeypatch.setattr(plugin_module, "_plugins", with_steps())
    argv = ["search", "deploy", "-n", "3", "--json", "--workspace", str(workspace)]
    result = CliRunner().invoke(cli, [*argv, "--set", TAGGED], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["hits"] and all(tagged(out))
    plain = json.loads(CliRunner().invoke(cli, argv, catch_exceptions=False).stdout)
    assert not any(tagged(plain))
    assert texts(out) == [TAG + text for text in reversed(texts(plain))]


# -- reme_core.light ---------------------------------------------------------------------------


def test_memory_search_serves_the_pipeline(example: Path) -> None:
    with open_reme(example, TAGGED) as reme:
        reme.index()
        found = AgentContext(reme, persist_pipeline=None).memory_search("deploy", max_results=3)
    assert found.hits and all(tagged(found))


# -- search_v2 (reme-lme) reaches MCP ------------------------------------------------------------

TRANSCRIPT = "sessions/narwhal-chat.jsonl"


def test_search_v2_reaches_mcp(tmp_path: Path) -> None:
    if importlib.util.find_spec("reme_lme") is None:
        pytest.skip("reme-lme is not installed (tox installs it: pip install ./plugins/lme)")
    import reme_lme.plugin

    workspace = copy_example(tmp_path / "ws")
    turns = [
        {"role": "user", "content": "When does the narwhal migration start?"},
        {"role": "assistant", "content": "The narwhal migration starts in spring."},
        {"role": "user", "content": "Thanks."},
    ]
    (workspace / TRANSCRIPT).write_text(
        "".join(json.dumps(turn) + "\n" for turn in turns), encoding="utf-8"
    )
    manager = plugins(reme_lme.plugin)
    with running_server(
        workspace, "pipelines.search.steps=[{name: search_v2}]", manager=manager
    ) as server:
        _, secret = TokenStore(workspace / ".reme").create("read", ["default"])
        result = mcp_search(server.url, secret, {"query": "narwhal migration", "limit": 3})
    assert not result.is_error, result.content
    hits = result.structured_content["hits"]
    # search_v2's shape: one hit per transcript line range, named by its lines, the turns
    # rendered `role: content`; the shipped search would return the chunker's chunk instead.
    first = hits[0]
    assert first["path"] == TRANSCRIPT
    assert first["chunk_id"] == f"{TRANSCRIPT}#L{first['start_line']}-L{first['end_line']}"
    assert first["heading"] == f"lines {first['start_line']}-{first['end_line']}"
    assert "narwhal migration" in first["text"]
    assert result.structured_content["linked"] == []
    with Reme.open(workspace, overrides=KEYWORD_ONLY, env={}, plugins=manager) as reme:
        shipped = reme.search("narwhal migration", limit=3)  # the default pipeline
    assert not any(h.heading.startswith("lines ") for h in shipped.hits)
