"""Each component hook registers into the registry of its type, with the plugin as provider."""

from __future__ import annotations

import types

import click
import pytest

from reme_core import hookimpl
from reme_core.components import AgentWrapper, Embedding, FileStore, Llm, Step
from reme_core.plugins import Plugins


class FakeLlm(Llm):
    name = "fake_llm"


class FakeEmbedding(Embedding):
    name = "fake_embedding"


class FakeFileStore(FileStore):
    name = "fake_store"


class FakeAgent(AgentWrapper):
    name = "fake_agent"


class EchoStep(Step):
    name = "echo"

    def run(self, run: object, state: dict) -> dict:
        return {"echo": state.get("input")}


@hookimpl
def register_llms(register):
    register(FakeLlm)


@hookimpl
def register_embeddings(register):
    register(FakeEmbedding)


@hookimpl
def register_file_stores(register):
    register(FakeFileStore)


@hookimpl
def register_agent_wrappers(register):
    register(FakeAgent)


@hookimpl
def register_steps(register):
    register(EchoStep)


@click.command("fake-cmd")
def fake_cmd() -> None:
    """A command registered under a group."""


@hookimpl
def register_commands(register):
    register(fake_cmd, group="fake-group")


@pytest.fixture
def plugins() -> Plugins:
    module = types.ModuleType("fake_everything")
    for hook in (
        register_llms,
        register_embeddings,
        register_file_stores,
        register_agent_wrappers,
        register_steps,
        register_commands,
    ):
        setattr(module, hook.__name__, hook)
    manager = Plugins()
    manager.register(module, name="fake_everything")
    manager.collect()
    return manager


@pytest.mark.parametrize(
    ("kind", "name", "cls"),
    [
        ("llm", "fake_llm", FakeLlm),
        ("embedding", "fake_embedding", FakeEmbedding),
        ("file_store", "fake_store", FakeFileStore),
        ("agent_wrapper", "fake_agent", FakeAgent),
        ("step", "echo", EchoStep),
    ],
)
def test_hook_fills_its_registry(plugins: Plugins, kind: str, name: str, cls: type):
    entry = plugins.registry(kind).entry(name)
    assert entry.cls is cls
    assert entry.provider == "fake_everything"


def test_step_runs(plugins: Plugins):
    step = plugins.get("step", "echo")()
    assert step.run(None, {"input": 3}) == {"echo": 3}


def test_commands_nest_under_their_group(plugins: Plugins):
    from reme_core.cli import RemeGroup, attach_plugin_commands

    root = RemeGroup("root")
    attach_plugin_commands(root, plugins)
    group = root.commands["fake-group"]
    assert isinstance(group, click.Group)
    assert "fake-cmd" in group.commands
