"""Fixtures for reme-locomo's tests: plugins registered directly (no installed entry points), the
host's REME_* variables kept out, a CLI with `bench` and `bench locomo` wired as `reme` wires them
(the shared part lives in ``reme_core.bench.testing``). Every run uses the keyword-only `bm25`
config: no embedding model is loaded."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import click
import pytest
import reme_locomo.plugin

from reme_core.bench.testing import (
    bench_cli,
    build_test_plugins,
    isolated_environment,
    share_plugins,
)
from reme_core.plugins import Plugins

FIXTURES = Path(__file__).resolve().parent / "fixtures"
LOCOMO = FIXTURES / "locomo_tiny.json"
REALTALK = FIXTURES / "realtalk"


@pytest.fixture(autouse=True)
def _isolated(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    with isolated_environment(monkeypatch, tmp_path_factory.mktemp("cache")):
        yield


@pytest.fixture
def plugins(monkeypatch: pytest.MonkeyPatch) -> Plugins:
    return share_plugins(monkeypatch, build_test_plugins(reme_locomo.plugin))


@pytest.fixture
def cli(plugins: Plugins) -> click.Group:
    return bench_cli(plugins)
