"""The `cached` llm: a hit costs no call and answers exactly what the first call did."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel

import reme_plugins.llm_cached
from reme_core import plugins as plugin_module
from reme_core.errors import ConfigError
from reme_core.plugins import Plugins
from reme_core.settings import ComponentSelection, resolve_component


class Verdict(BaseModel):
    correct: bool
    reason: str


@pytest.fixture
def plugins(default_plugins: Plugins, monkeypatch: pytest.MonkeyPatch) -> Plugins:
    if "cached" not in default_plugins.registry("llm"):  # a shipped default in recent reme
        default_plugins.register(reme_plugins.llm_cached)
        default_plugins.collect()
    # The cached llm finds its inner model in the process's plugin manager.
    monkeypatch.setattr(plugin_module, "_plugins", default_plugins)
    return default_plugins


def _cached(plugins: Plugins, tmp_path: Path, script: list[object]) -> object:
    # Same file name each time: the scripted model's id (part of the cache key) is its name.
    folder = tmp_path / f"run{len(list(tmp_path.glob('run*')))}"
    folder.mkdir()
    path = folder / "script.json"
    path.write_text(json.dumps(script))
    selection = ComponentSelection(
        name="cached",
        settings={
            "inner": {"name": "scripted", "settings": {"path": str(path)}},
            "dir": str(tmp_path / "cache"),
        },
    )
    cls, settings = resolve_component(plugins, "llm", selection, "components.llm")
    return cls(settings, None)


MESSAGES = [{"role": "user", "content": "Is 2 + 2 four?"}]


def test_a_repeated_request_is_answered_from_disk(plugins: Plugins, tmp_path: Path) -> None:
    llm = _cached(plugins, tmp_path, ["yes", "a second answer the cache must not ask for"])
    assert llm.model_id.startswith("cached:scripted:")
    assert llm.complete(MESSAGES) == "yes"
    assert llm.complete(MESSAGES) == "yes"
    assert llm.usage.calls == 1 and llm.cache_hits == 1
    assert llm.inner.remaining == 1
    # Another max_tokens is another request.
    assert llm.complete(MESSAGES, max_tokens=5).startswith("a second")
    assert llm.usage.calls == 2


def test_structured_answers_are_cached_across_instances(plugins: Plugins, tmp_path: Path) -> None:
    first = _cached(plugins, tmp_path, [{"correct": True, "reason": "sum"}])
    answer = first.structured(MESSAGES, Verdict)
    assert answer == Verdict(correct=True, reason="sum")
    # A new process with an empty script: only the cache can answer.
    again = _cached(plugins, tmp_path, [])
    assert again.structured(MESSAGES, Verdict) == answer
    assert again.usage.calls == 0 and again.cache_hits == 1


def test_the_key_covers_model_messages_and_schema(plugins: Plugins, tmp_path: Path) -> None:
    llm = _cached(plugins, tmp_path, ["x"])
    base = llm.request_key("structured", MESSAGES, Verdict, None)
    other_messages = [{"role": "user", "content": "Is 2 + 2 five?"}]
    assert llm.request_key("structured", other_messages, Verdict, None) != base
    assert llm.request_key("structured", MESSAGES, None, None) != base
    assert llm.request_key("structured", MESSAGES, Verdict, None) == base
    files = list((tmp_path / "cache").rglob("*.json"))
    assert files == []  # no answer stored before a call


def test_a_failed_inner_call_is_not_cached(plugins: Plugins, tmp_path: Path) -> None:
    llm = _cached(plugins, tmp_path, [{"error": "rate limited"}, "ok"])
    with pytest.raises(Exception, match="rate limited"):
        llm.complete(MESSAGES)
    assert llm.complete(MESSAGES) == "ok"
    assert llm.usage.calls == 2 and llm.cache_hits == 0


def test_it_needs_an_inner_model_and_not_itself(plugins: Plugins, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="inner"):
        resolve_component(plugins, "llm", ComponentSelection(name="cached"), "components.llm")
    selection = ComponentSelection(name="cached", settings={"inner": {"name": "cached"}})
    cls, settings = resolve_component(plugins, "llm", selection, "components.llm")
    with pytest.raises(ConfigError, match="cannot wrap"):
        cls(settings, None)
