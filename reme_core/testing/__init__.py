"""reme's conformance kit: one pytest suite per component type, shipped with reme.

A plugin proves its component by subclassing the suite for its type and overriding the one
fixture that builds it (see each class's docstring)::

    from reme_core.testing import ChunkerConformance

    class TestMyChunker(ChunkerConformance):
        @pytest.fixture
        def chunker(self):
            return MyChunker(MyChunker.Settings())

The classes are not collected by themselves (no ``Test`` prefix). Loaded as a pytest plugin
(``pytest -p reme_core.testing``, or ``pytest_plugins = ["reme_core.testing"]`` in a conftest),
this module also gives the suites' assertions pytest's detailed messages and offers two
fixtures: ``reme_workspace`` (an empty, initialised workspace) and ``reme_context`` (the
``ComponentContext`` a component built inside that workspace receives).
"""

from __future__ import annotations

from pathlib import Path

import pytest

# Before the suites are imported, so a failed check shows the values it compared.
pytest.register_assert_rewrite(
    "reme_core.testing.agent_wrapper",
    "reme_core.testing.chunker",
    "reme_core.testing.embedding",
    "reme_core.testing.graph",
    "reme_core.testing.keyword_index",
    "reme_core.testing.llm",
    "reme_core.testing.tag_index",
    "reme_core.testing.vector_store",
)

from reme_core.components import ComponentContext  # noqa: E402
from reme_core.testing.agent_wrapper import AgentWrapperConformance  # noqa: E402
from reme_core.testing.chunker import ChunkerConformance  # noqa: E402
from reme_core.testing.embedding import EmbeddingConformance  # noqa: E402
from reme_core.testing.graph import GraphConformance  # noqa: E402
from reme_core.testing.keyword_index import KeywordIndexConformance  # noqa: E402
from reme_core.testing.llm import LlmConformance  # noqa: E402
from reme_core.testing.tag_index import TagIndexConformance  # noqa: E402
from reme_core.testing.vector_store import VectorStoreConformance  # noqa: E402

__all__ = [
    "AgentWrapperConformance",
    "ChunkerConformance",
    "EmbeddingConformance",
    "GraphConformance",
    "KeywordIndexConformance",
    "LlmConformance",
    "TagIndexConformance",
    "VectorStoreConformance",
    "reme_context",
    "reme_workspace",
]


@pytest.fixture
def reme_workspace(tmp_path: Path) -> Path:
    """An empty workspace (``.reme/`` and the standard folders) in a temporary folder."""
    from reme_core.workspace import init_workspace

    root = tmp_path / "workspace"
    init_workspace(root)
    return root


@pytest.fixture
def reme_context(reme_workspace: Path) -> ComponentContext:
    """What reme hands a component it builds for ``reme_workspace``."""
    from reme_core.workspace import find_state_dir

    return ComponentContext(workspace=reme_workspace, state_dir=find_state_dir(reme_workspace))
