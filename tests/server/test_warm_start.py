"""`reme serve` loads the embedding model on a thread once it is up: the start does not wait
for it, it runs once, and a failure only warns (the arm then loads on the first search)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

import httpx
import numpy as np
import pytest
from conftest import KEYWORD_ONLY_ENV, copy_example

from reme_core import hookimpl
from reme_core.errors import EmbeddingError
from reme_core.server.serve import Server
from reme_core.settings import load_settings
from reme_plugins.embedding_hash import HashEmbedding
from tests.server.api_support import plugins

WAIT = 30.0


class GatedEmbedding(HashEmbedding):
    """The hash embedding whose query embeddings are counted, and held until ``gate`` opens."""

    name: ClassVar[str] = "gated_test"
    gate = threading.Event()
    queries: ClassVar[list[str]] = []

    def embed_query(self, text: str) -> np.ndarray:
        GatedEmbedding.queries.append(text)
        assert GatedEmbedding.gate.wait(WAIT), "the test never opened the gate"
        return super().embed_query(text)


class FailingOnceEmbedding(HashEmbedding):
    """Its first query embedding fails (a model that cannot load yet); later ones work."""

    name: ClassVar[str] = "failing_once_test"
    calls: ClassVar[list[str]] = []

    def embed_query(self, text: str) -> np.ndarray:
        FailingOnceEmbedding.calls.append(text)
        if len(FailingOnceEmbedding.calls) == 1:
            raise EmbeddingError("the model file is missing")
        return super().embed_query(text)


class TestEmbeddings:
    @hookimpl
    def register_embeddings(self, register: Callable[[Any], None]) -> None:
        register(GatedEmbedding)
        register(FailingOnceEmbedding)


@contextmanager
def serving(workspace: Path, embedding: str, said: list[str]) -> Iterator[Server]:
    settings = load_settings(
        overrides=[
            f"workspace={workspace}",
            "server.port=0",
            f"components.embedding={{name: {embedding}}}",
            "components.file_store={name: local}",
        ],
        env=KEYWORD_ONLY_ENV,
    )
    server = Server(
        settings, plugins=plugins(TestEmbeddings()), echo=said.append, log_level="warning"
    )
    thread = threading.Thread(target=server.run)
    thread.start()
    try:
        assert server.ready.wait(WAIT) and server.url is not None
        yield server
    finally:
        GatedEmbedding.gate.set()  # never leave the warm-up thread waiting
        server.stop()
        thread.join(WAIT)


def embedding_state(server: Server) -> str | None:
    return server.registry.get("default").status()["vectors"].get("embedding")


def wait_for(check: Callable[[], bool]) -> None:
    """Poll until ``check`` holds (a deadline, not a timing assertion)."""
    deadline = time.monotonic() + WAIT
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return copy_example(tmp_path / "ws")


def test_the_model_warms_on_a_thread_once_the_server_is_up(workspace: Path):
    GatedEmbedding.gate.clear()
    GatedEmbedding.queries.clear()
    said: list[str] = []
    with serving(workspace, "gated_test", said) as server:
        # Up and answering while the warm-up is still held in the model.
        assert httpx.get(f"{server.url}/health", timeout=WAIT).status_code == 200
        wait_for(lambda: embedding_state(server) == "warming")
        GatedEmbedding.gate.set()
        wait_for(lambda: embedding_state(server) == "ready")
        assert GatedEmbedding.queries == ["warm up"]  # once, for the default workspace
        with server.registry.use("default") as reme:
            assert "vector" in reme.search("deploy").arms
    assert not [line for line in said if "warning" in line]


def test_a_failed_warm_up_warns_and_the_arm_loads_on_the_first_search(workspace: Path):
    FailingOnceEmbedding.calls.clear()
    said: list[str] = []
    with serving(workspace, "failing_once_test", said) as server:
        wait_for(lambda: (embedding_state(server) or "").startswith("failed"))
        assert "the model file is missing" in (embedding_state(server) or "")
        wait_for(lambda: any("warming the embedding model failed" in line for line in said))
        with server.registry.use("default") as reme:
            response = reme.search("deploy")
        assert "vector" in response.arms and response.hits
        assert len(FailingOnceEmbedding.calls) == 2  # the warm-up, then the search
