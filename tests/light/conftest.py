"""Fixtures of the context API tests: a workspace opened with the shipped defaults plus the
tokenizer plugins (registered directly, no entry points) and a recording model."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import DEFAULT_PLUGIN_MODULES, KEYWORD_ONLY_ENV

import reme_plugins.tokenizer_bpe_openai
import reme_plugins.tokenizer_estimate
import reme_plugins.tokenizer_hf
from reme_core.light import AgentContext, TokenCounter
from reme_core.plugins import Plugins
from reme_core.runtime import Reme
from reme_plugins.tokenizer_estimate import EstimateTokenizer
from tests.fake_llm import RecordingLlm, plugins_with

TOKENIZER_MODULES = [
    reme_plugins.tokenizer_estimate,
    reme_plugins.tokenizer_bpe_openai,
    reme_plugins.tokenizer_hf,
]


def light_plugins() -> Plugins:
    """The shipped defaults, the tokenizers (unless the defaults already hold them) and the
    recording model."""
    plugins = plugins_with(RecordingLlm)
    for module in TOKENIZER_MODULES:
        if module not in DEFAULT_PLUGIN_MODULES:
            plugins.register(module)
    return plugins


@pytest.fixture
def plugins() -> Plugins:
    return light_plugins()


@pytest.fixture
def counter() -> TokenCounter:
    return TokenCounter(EstimateTokenizer())


@pytest.fixture
def open_reme(root: Path, plugins: Plugins) -> Iterator[Callable[..., Reme]]:
    opened: list[Reme] = []

    def open_(*overrides: str) -> Reme:
        reme = Reme.open(
            root, plugins=plugins, env=KEYWORD_ONLY_ENV, overrides=["timezone=UTC", *overrides]
        )
        opened.append(reme)
        return reme

    yield open_
    for reme in opened:
        reme.close()


@pytest.fixture
def reme(open_reme: Callable[..., Reme]) -> Reme:
    return open_reme()


@pytest.fixture
def context(reme: Reme) -> Iterator[AgentContext]:
    ctx = AgentContext(reme, session_id="s1", llm=None)
    yield ctx
    ctx.close()
