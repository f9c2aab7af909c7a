"""Fixtures of the reme-beam tests: an isolated environment and a plugin manager built by hand.

Installed entry points are never loaded: ``beam_plugins`` registers reme's shipped defaults, this
package and a fake model, and becomes the process's shared manager, which is what the runner's
worker (``load_plugins()``) and the ``cached`` llm (its inner model) look up.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from beam_testing import build_plugins

from reme_core import plugins as plugin_module
from reme_core.plugins import Plugins


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key in list(os.environ):
        if key.startswith("REME_"):
            monkeypatch.delenv(key)
    plugin_module.reset_plugins()
    yield
    plugin_module.reset_plugins()


@pytest.fixture
def beam_plugins(monkeypatch: pytest.MonkeyPatch) -> Plugins:
    plugins = build_plugins()
    monkeypatch.setattr(plugin_module, "_plugins", plugins)
    return plugins
