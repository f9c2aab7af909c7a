"""Fixtures for reme-lme's tests: plugins registered directly (no installed entry points), the
host's REME_* variables kept out, a CLI with `bench` and `bench lme` wired as `reme` wires them."""

from __future__ import annotations

import gzip
import importlib
import os
import pkgutil
import shutil
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import click
import pytest
import reme_lme.plugin

import reme_plugins
from reme_core import plugins as plugin_module
from reme_core.cli import RemeGroup, attach_plugin_commands
from reme_core.cli.bench_cmd import bench_group
from reme_core.hookspecs import HOOK_NAMES
from reme_core.plugins import Plugins

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def shipped_modules() -> list[ModuleType]:
    """Every module of reme_plugins that implements a hook: reme's shipped defaults, found by
    walking the package (so a default added to reme is registered here too)."""
    found = []
    for info in pkgutil.walk_packages(reme_plugins.__path__, "reme_plugins."):
        module = importlib.import_module(info.name)
        if any(callable(getattr(module, hook, None)) for hook in HOOK_NAMES):
            found.append(module)
    return found


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key in list(os.environ):
        if key.startswith("REME_"):
            monkeypatch.delenv(key)
    plugin_module.reset_plugins()
    yield
    plugin_module.reset_plugins()


@pytest.fixture
def plugins(monkeypatch: pytest.MonkeyPatch) -> Plugins:
    """reme's shipped plugins, `cached` and reme-lme, as the process's plugin manager."""
    manager = Plugins()
    for module in shipped_modules():  # `cached` (reme_plugins.llm_cached) among them
        manager.register(module)
    manager.register(reme_lme.plugin)
    manager.collect()
    monkeypatch.setattr(plugin_module, "_plugins", manager)
    return manager


@pytest.fixture
def cli(plugins: Plugins) -> click.Group:
    root = RemeGroup("reme")
    root.add_command(click.Group("bench", commands=dict(bench_group.commands)))
    attach_plugin_commands(root, plugins)
    return root


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """The tiny S-format file, gzipped like the upstream downloads often are."""
    target = tmp_path / "longmemeval_s_tiny.json.gz"
    with (FIXTURES / "longmemeval_s_tiny.json").open("rb") as src, gzip.open(target, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return target
