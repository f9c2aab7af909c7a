"""Fixtures for reme-lme's tests: plugins registered directly (no installed entry points), the
host's REME_* variables kept out, a CLI with `bench` and `bench lme` wired as `reme` wires them
(the shared part lives in ``reme_core.bench.testing``)."""

from __future__ import annotations

import gzip
import shutil
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
import reme_lme.plugin

from reme_core.bench.testing import (
    bench_cli,
    build_test_plugins,
    isolated_environment,
    share_plugins,
)
from reme_core.plugins import Plugins

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(autouse=True)
def _isolated(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    with isolated_environment(monkeypatch, tmp_path_factory.mktemp("cache")):
        yield


@pytest.fixture
def plugins(monkeypatch: pytest.MonkeyPatch) -> Plugins:
    """reme's shipped plugins, `cached` among them, and reme-lme, as the process's plugin
    manager (the runner's workers call `load_plugins()`)."""
    return share_plugins(monkeypatch, build_test_plugins(reme_lme.plugin))


@pytest.fixture
def cli(plugins: Plugins) -> click.Group:
    return bench_cli(plugins)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """The tiny S-format file, gzipped like the upstream downloads often are."""
    target = tmp_path / "longmemeval_s_tiny.json.gz"
    with (FIXTURES / "longmemeval_s_tiny.json").open("rb") as src, gzip.open(target, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return target
