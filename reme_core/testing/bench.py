"""Fixture helpers for benchmark plugins' tests (``reme-lme``, ``reme-beam``), part of the kit.

A benchmark plugin's tests run without installed entry points: they register reme's shipped
defaults directly, their own plugin module and perhaps a fake model, keep the host's ``REME_*``
variables out, and make that manager the process's shared one (the runner's workers call
``load_plugins()``). A ``conftest.py`` reads::

    @pytest.fixture(autouse=True)
    def _isolated(monkeypatch):
        with isolated_environment(monkeypatch):
            yield

    @pytest.fixture
    def plugins(monkeypatch):
        return share_plugins(monkeypatch, build_test_plugins(my_bench.plugin, llms=[FakeLlm]))

    @pytest.fixture
    def cli(plugins):
        return bench_cli(plugins)

Here in the kit, above the CLI it wires; ``reme_core.bench.testing``, where benchmark plugins
have always imported them from, re-exports them.
"""

from __future__ import annotations

import importlib.metadata
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import click

from reme_core import hookimpl
from reme_core import plugins as plugin_module
from reme_core.cli import RemeGroup, attach_plugin_commands
from reme_core.cli.bench_cmd import bench_group
from reme_core.components import Llm
from reme_core.plugins import ENTRY_POINT_GROUP, Plugins

if TYPE_CHECKING:
    import pytest


def shipped_plugin_modules() -> list[ModuleType]:
    """reme's shipped defaults: the modules the ``reme`` distribution registers as ``reme``
    entry points (so a default added to reme is registered in the tests too), by module name.
    Only reme's own entry points are loaded, never another installed plugin's."""
    points = importlib.metadata.distribution("reme").entry_points.select(group=ENTRY_POINT_GROUP)
    return sorted((point.load() for point in points), key=lambda module: module.__name__)


class _TestLlms:
    """A plugin registering the given model classes (fakes) as llms."""

    def __init__(self, llms: Iterable[type[Llm]]):
        self.llms = list(llms)

    @hookimpl
    def register_llms(self, register: Callable[[type[Llm]], None]) -> None:
        for llm in self.llms:
            register(llm)


def build_test_plugins(*extra: object, llms: Iterable[type[Llm]] = ()) -> Plugins:
    """A collected plugin manager: the shipped defaults, then ``extra`` (plugin modules or
    objects, such as a benchmark's ``plugin`` module), then ``llms`` (fake model classes). No
    installed entry point is loaded."""
    plugins = Plugins()
    for module in shipped_plugin_modules():
        plugins.register(module, name=module.__name__)
    for plugin in extra:
        plugins.register(plugin, name=getattr(plugin, "__name__", None))
    llms = list(llms)
    if llms:
        plugins.register(_TestLlms(llms), name="test_llms")
    plugins.collect()
    return plugins


def share_plugins(monkeypatch: pytest.MonkeyPatch, plugins: Plugins) -> Plugins:
    """Make ``plugins`` what ``load_plugins()`` returns for this test; returns it."""
    monkeypatch.setattr(plugin_module, "_plugins", plugins)
    return plugins


@contextmanager
def isolated_environment(
    monkeypatch: pytest.MonkeyPatch, cache_home: Path | None = None
) -> Iterator[None]:
    """No host ``REME_*`` variable leaks in, and the shared plugin manager is forgotten before
    and after (wrap an autouse fixture's ``yield`` in it). With ``cache_home`` (a temporary
    folder), ``XDG_CACHE_HOME`` points there, so the caches a run keeps by default (model
    answers, dataset splits) stay out of the user's home."""
    for key in list(os.environ):
        if key.startswith("REME_"):
            monkeypatch.delenv(key)
    if cache_home is not None:
        monkeypatch.setenv("XDG_CACHE_HOME", str(cache_home))
    plugin_module.reset_plugins()
    try:
        yield
    finally:
        plugin_module.reset_plugins()


def bench_cli(plugins: Plugins) -> click.Group:
    """A ``reme`` group with ``bench`` and the plugins' commands attached, as ``reme`` wires them
    (a benchmark's commands nest under ``bench``)."""
    root = RemeGroup("reme")
    root.add_command(click.Group("bench", commands=dict(bench_group.commands)))
    attach_plugin_commands(root, plugins)
    return root


__all__ = [
    "bench_cli",
    "build_test_plugins",
    "isolated_environment",
    "share_plugins",
    "shipped_plugin_modules",
]
