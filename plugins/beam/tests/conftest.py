"""Fixtures of the reme-beam tests: an isolated environment and a plugin manager built by hand.

Installed entry points are never loaded: ``beam_plugins`` registers reme's shipped defaults, this
package and a fake model, and becomes the process's shared manager, which the runner's worker
(``load_plugins()``) opens its workspaces with, so the ``cached`` llm finds its inner model (the
fake) there too (a workspace's components build others from its own plugin set). The shared part
lives in ``reme_core.bench.testing``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import reme_beam.plugin
from beam_testing import FakeLlm

from reme_core.bench.testing import build_test_plugins, isolated_environment, share_plugins
from reme_core.plugins import Plugins


@pytest.fixture(autouse=True)
def _isolated(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    with isolated_environment(monkeypatch, tmp_path_factory.mktemp("cache")):
        yield


@pytest.fixture
def beam_plugins(monkeypatch: pytest.MonkeyPatch) -> Plugins:
    return share_plugins(monkeypatch, build_test_plugins(reme_beam.plugin, llms=[FakeLlm]))
