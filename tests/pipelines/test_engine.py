from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import KEYWORD_ONLY_ENV, copy_example

from reme_core.cli import cli
from reme_core.cli.run_cmd import parse_param
from reme_core.components import Step
from reme_core.errors import ConfigError, RemeError, SearchError
from reme_core.pipelines.engine import PipelineError
from reme_core.plugins import Plugins
from reme_core.runtime import Reme
from tests.fake_llm import plugins_with


class Double(Step):
    name = "double"

    def run(self, run, state):  # type: ignore[no-untyped-def]
        return {"value": state["value"] * 2}


class Boom(Step):
    name = "boom"

    def run(self, run, state):  # type: ignore[no-untyped-def]
        raise SearchError("scripted failure")


PIPELINES = [
    "pipelines.twice.steps=[{name: double}, {name: double}]",
    "pipelines.fails.steps=[{name: double}, {name: boom}]",
]


@pytest.fixture
def reme(tmp_path: Path) -> Iterator[Reme]:
    plugins = plugins_with(Double, Boom)
    root = tmp_path / "ws"
    copy_example(root)
    with Reme.open(root, plugins=plugins, env=KEYWORD_ONLY_ENV, overrides=PIPELINES) as opened:
        opened.index()
        yield opened


def test_steps_run_in_order_over_one_state(reme: Reme):
    result = reme.run("twice", {"value": 3})
    assert result.outputs == {"value": 12}
    assert [s.name for s in result.steps] == ["double", "double"]
    assert result.params == {"value": 3}


def test_search_step_returns_the_search_response(reme: Reme):
    result = reme.run("search", {"query": "too many clients", "limit": 2, "tags": "incident"})
    hits = result.outputs["search"]["hits"]
    assert result.outputs["search"]["arms"] == ["keyword"]
    assert {h["path"] for h in hits} == {"resource/runbook-incident-2026-11.md"}


def test_search_step_needs_a_query(reme: Reme):
    with pytest.raises(PipelineError, match="needs a `query`"):
        reme.run("search", {})


def test_failing_step_is_named(reme: Reme):
    with pytest.raises(PipelineError, match="fails: step 'boom' failed: scripted failure"):
        reme.run("fails", {"value": 1})


def test_unknown_pipeline_lists_the_configured_ones(reme: Reme):
    with pytest.raises(
        PipelineError,
        match=r"unknown pipeline 'nope' \(configured: auto_memory, auto_memory_cc, auto_memory_codex, auto_resource, auto_tag, dream, fails, proactive, search, twice\)",
    ):
        reme.run("nope")


def test_unknown_step_in_config_names_its_path(tmp_path: Path, default_plugins: Plugins):
    (tmp_path / "ws").mkdir()
    with pytest.raises(ConfigError, match=r"pipelines\.x\.steps\[0\]\.name: unknown step 'nope'"):
        Reme.open(
            tmp_path / "ws",
            plugins=default_plugins,
            env=KEYWORD_ONLY_ENV,
            overrides=["pipelines.x.steps=[{name: nope}]"],
        )


def test_parse_param_values_and_files(tmp_path: Path):
    assert parse_param("limit=5") == ("limit", 5)
    assert parse_param("tags=[a, b]") == ("tags", ["a", "b"])
    assert parse_param("query=what: now") == ("query", "what: now")
    assert parse_param("filters={a: 1}") == ("filters", {"a": 1})
    (tmp_path / "m.json").write_text('[{"role": "user", "content": "hi"}]')
    assert parse_param(f"messages=@{tmp_path / 'm.json'}") == (
        "messages",
        [{"role": "user", "content": "hi"}],
    )
    with pytest.raises(RemeError, match="cannot read"):
        parse_param(f"messages=@{tmp_path / 'missing.json'}")
    with pytest.raises(RemeError, match="expected key=value"):
        parse_param("novalue")


def test_reme_run_cli(tmp_path: Path):
    root = tmp_path / "ws"
    copy_example(root)
    args = ["run", "search", "-w", str(root), "--param", "query=orjson", "--param", "limit=1"]
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["pipeline"] == "search" and len(data["outputs"]["search"]["hits"]) == 1
    missing = CliRunner().invoke(cli, ["run", "nope", "-w", str(root)])
    assert missing.exit_code != 0 and "unknown pipeline 'nope'" in missing.output


class Ask(Step):
    name = "ask"

    def run(self, run, state):  # type: ignore[no-untyped-def]
        return {"answer": run.llm.complete([{"role": "user", "content": state["question"]}])}


def test_llm_calls_and_tokens_are_reported_per_run(tmp_path: Path):
    plugins = plugins_with(Ask)
    root = tmp_path / "ws"
    root.mkdir()
    (root / "script.json").write_text('["forty-two", "again"]')
    overrides = [
        "components.llm.name=scripted",
        "components.llm.settings.path=script.json",
        "pipelines.ask.steps=[{name: ask}]",
    ]
    with Reme.open(root, plugins=plugins, env=KEYWORD_ONLY_ENV, overrides=overrides) as reme:
        first = reme.run("ask", {"question": "what is the answer?"})
        second = reme.run("ask", {"question": "and now?"})
        searched = reme.run("search", {"query": "anything"})
    assert first.outputs == {"answer": "forty-two"} and second.outputs == {"answer": "again"}
    assert first.usage.calls == 1 and first.usage.prompt_tokens > 0
    assert second.usage.calls == 1  # per run, not cumulative
    assert searched.usage.calls == 0
