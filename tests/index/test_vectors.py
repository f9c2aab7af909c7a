"""Hybrid search end to end, with the fast fake embedding (`hash`) and the exact `local` store."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from conftest import DEFAULT_PLUGIN_MODULES, FAKE_VECTORS

from reme_core import hookimpl
from reme_core.errors import EmbeddingError, StoreBusyError
from reme_core.plugins import Plugins
from reme_core.runtime import Reme
from reme_core.schema import SearchFilters
from reme_plugins.embedding_hash import HashEmbedding
from reme_plugins.vector_local import LocalFileStore

CALLS: list[int] = []
FAIL: list[bool] = []


class CountingHash(HashEmbedding):
    """Counts passages embedded and can be told to fail, to test the cache and retries."""

    name = "counting_hash"

    def embed_passages(self, texts):  # type: ignore[no-untyped-def]
        if FAIL:
            raise EmbeddingError("scripted failure")
        CALLS.append(len(texts))
        return super().embed_passages(texts)


class BusyStore(LocalFileStore):
    name = "busy"

    def open(self, model_id: str, dim: int) -> None:
        raise StoreBusyError("another process holds the vector store")


class Extras:
    @hookimpl
    def register_embeddings(self, register):  # type: ignore[no-untyped-def]
        register(CountingHash)

    @hookimpl
    def register_file_stores(self, register):  # type: ignore[no-untyped-def]
        register(BusyStore)


@pytest.fixture
def plugins() -> Plugins:
    manager = Plugins()
    for module in DEFAULT_PLUGIN_MODULES:
        manager.register(module)
    manager.register(Extras(), name="test_extras")
    manager.collect()
    return manager


@pytest.fixture(autouse=True)
def _reset_counters() -> Iterator[None]:
    CALLS.clear()
    FAIL.clear()
    yield
    FAIL.clear()


def open_reme(workspace: Path, plugins: Plugins, *extra: str) -> Reme:
    return Reme.open(workspace, plugins=plugins, env={}, overrides=[*FAKE_VECTORS, *extra])


def test_hybrid_search_runs_both_arms_with_per_arm_scores(workspace: Path, plugins: Plugins):
    with open_reme(workspace, plugins) as reme:
        reme.index()
        response = reme.search("orjson ModuleNotFoundError deploy", limit=5)
    assert response.arms == ["keyword", "vector"]
    assert response.degraded == []
    top = response.hits[0]
    assert top.path == "daily/2026-11-02/session-deploy-failure.md"
    assert set(top.arm_ranks) == set(top.arm_scores) == {"keyword", "vector"}
    assert 0 < top.arm_scores["vector"] <= 1.0
    assert all(0.0 <= h.score <= 1.0 for h in response.hits)


def test_min_score_means_the_same_with_vectors_on_or_off(workspace: Path, plugins: Plugins):
    with open_reme(workspace, plugins) as reme:
        reme.index()
        hybrid = reme.search("zzzunseen orjson", limit=20)
    with Reme.open(
        workspace,
        plugins=plugins,
        env={},
        overrides=["components.embedding=null", "components.file_store=null"],
    ) as reme:
        keyword = reme.search("zzzunseen orjson", limit=20)
    # First in every arm that ran scores 1.0 either way; a hit only one arm found scores less.
    assert keyword.hits[0].score == 1.0
    both_first = [h for h in hybrid.hits if h.arm_ranks == {"keyword": 1, "vector": 1}]
    assert all(h.score == 1.0 for h in both_first)
    assert all(h.score < 1.0 for h in hybrid.hits if len(h.arm_ranks) == 1)


def test_writes_are_embedded_before_they_return(workspace: Path, plugins: Plugins):
    with open_reme(workspace, plugins, "search.vector_weight=1.0") as reme:
        reme.index()
        reme.files.write(
            "digest/wiki/okapi.md", "# Okapi\n\nThe okapi lives in the Ituri forest.\n"
        )
        hits = reme.search("okapi ituri forest", limit=3).hits
        assert hits[0].path == "digest/wiki/okapi.md"
        assert "vector" in hits[0].arm_ranks
        reme.files.delete("digest/wiki/okapi.md")
        assert all(h.path != "digest/wiki/okapi.md" for h in reme.search("okapi", limit=10).hits)


def test_unchanged_chunks_are_never_embedded_twice(workspace: Path, plugins: Plugins):
    overrides = ["components.embedding.name=counting_hash"]
    with open_reme(workspace, plugins, *overrides) as reme:
        reme.index()
        first = sum(CALLS)
        assert first == reme.catalog.counts()["chunks"]
        reme.reindex()  # drops the store's vectors; the cache refills it
    with open_reme(workspace, plugins, *overrides) as reme:
        reme.index()
        assert reme.status()["vectors"]["state"] == "ready"
    assert sum(CALLS) == first


def test_model_change_rebuilds_vectors_and_status_says_so(workspace: Path, plugins: Plugins):
    with open_reme(workspace, plugins) as reme:
        reme.index()
        assert reme.status()["vectors"]["model"] == "hash-64"
    with open_reme(workspace, plugins, "components.embedding.settings.dim=32") as reme:
        status = reme.status()["vectors"]
        assert status["model"] == "hash-32"
        assert status["state"] == "incomplete" and status["embedded"] == 0
        assert "vector: 0 of" in " ".join(reme.search("deploy").degraded)
        reme.index(vectors="background")
        deadline = time.monotonic() + 30
        while reme.vectors.building and time.monotonic() < deadline:
            time.sleep(0.01)
        status = reme.status()["vectors"]
        assert status["state"] == "ready" and status["embedded"] == status["total"] > 0
        assert reme.search("deploy").degraded == []


def test_unavailable_store_degrades_to_keywords_and_says_so(workspace: Path, plugins: Plugins):
    with open_reme(workspace, plugins, "components.file_store.name=busy") as reme:
        reme.index()
        response = reme.search("orjson")
        assert response.arms == ["keyword"]
        assert response.hits and response.hits[0].score == 1.0
        assert any("another process holds" in note for note in response.degraded)
        assert reme.status()["vectors"]["state"] == "unavailable"


def test_failed_embedding_leaves_the_write_and_retries_later(workspace: Path, plugins: Plugins):
    overrides = ["components.embedding.name=counting_hash"]
    with open_reme(workspace, plugins, *overrides) as reme:
        reme.index()
        FAIL.append(True)
        result = reme.files.write("digest/wiki/tapir.md", "# Tapir\n\nTapirs browse at night.\n")
        assert result.created
        found = reme.search("tapirs", limit=20).hits
        assert [h.arm_ranks for h in found if h.path == "digest/wiki/tapir.md"] == [{"keyword": 1}]
        status = reme.status()["vectors"]
        assert "scripted failure" in status["last_error"] and status["state"] == "incomplete"
        FAIL.clear()
        reme.index()
        status = reme.status()["vectors"]
        assert status["state"] == "ready" and status["last_error"] is None


def test_filters_apply_inside_the_vector_arm(workspace: Path, plugins: Plugins):
    with open_reme(workspace, plugins, "search.vector_weight=1.0") as reme:
        reme.index()
        archived = reme.search("heroku hosting", filters=SearchFilters(statuses=["archived"]))
        assert {h.path for h in archived.hits} == {"digest/wiki/old-hosting-heroku.md"}
        active = reme.search("heroku hosting", limit=50)
        assert "digest/wiki/old-hosting-heroku.md" not in {h.path for h in active.hits}
        tagged = reme.search("postgres", limit=50, filters=SearchFilters(tags=["incident"]))
        assert {h.path for h in tagged.hits} == {"resource/runbook-incident-2026-11.md"}
        daily = reme.search("postgres", limit=50, filters=SearchFilters(paths=["daily/*/*.md"]))
        assert daily.hits and all(h.path.startswith("daily/2026-") for h in daily.hits)
        assert all(h.path.count("/") == 2 for h in daily.hits)


def test_vector_records_carry_ancestor_tags(workspace: Path, plugins: Plugins):
    with open_reme(workspace, plugins) as reme:
        reme.files.write(
            "digest/wiki/nested.md", "---\ntags: [project/reme]\n---\n# Nested\n\nquokka\n"
        )
        hits = reme.search("quokka", filters=SearchFilters(tags=["project"])).hits
        assert [h.path for h in hits] == ["digest/wiki/nested.md"]
        assert "vector" in hits[0].arm_ranks


def test_checked_refuses_bad_model_output(workspace: Path, plugins: Plugins, monkeypatch):
    monkeypatch.setattr(
        HashEmbedding, "embed_passages", lambda self, texts: np.full((len(texts), 3), np.nan)
    )
    with open_reme(workspace, plugins) as reme:
        reme.index()
        status = reme.status()["vectors"]
        assert "shape" in (status["last_error"] or "")
        assert status["embedded"] == 0
