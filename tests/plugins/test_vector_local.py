"""The local exact vector store: the FileStore conformance suite plus what is specific to it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from reme_core.components import ComponentContext, VectorRecord
from reme_core.errors import PluginError, RemeError
from reme_core.plugins import Plugins
from reme_core.schema import SearchFilters
from reme_core.testing.vector_store import DIM, MODEL, VectorStoreConformance, unit
from reme_plugins import vector_local
from reme_plugins.vector_local import LocalFileStore


def _context(state_dir: Path) -> ComponentContext:
    return ComponentContext(workspace=state_dir.parent, state_dir=state_dir)


class TestLocalFileStore(VectorStoreConformance):
    store_class = "reme_plugins.vector_local:LocalFileStore"

    @pytest.fixture
    def make_store(self, state_dir):
        return lambda: LocalFileStore(LocalFileStore.Settings(), _context(state_dir))


@pytest.fixture
def store(tmp_path: Path):
    s = LocalFileStore(LocalFileStore.Settings(), _context(tmp_path / ".reme"))
    s.open(MODEL, DIM)
    yield s
    s.close()


def test_registers_as_local_file_store() -> None:
    plugins = Plugins()
    plugins.register(vector_local, name="vector_local")
    assert plugins.get("file_store", "local") is LocalFileStore


def test_layout_of_the_database(store: LocalFileStore, tmp_path: Path) -> None:
    v = unit(np.random.default_rng(0), 1)[0] * 3  # stored scaled to unit length
    store.upsert([VectorRecord("a.md#0", "a.md", v, date="2024-01-02", tags=("x/y",))])
    store.close()
    with sqlite3.connect(tmp_path / ".reme" / "vectors.sqlite3") as conn:
        meta = dict(conn.execute("SELECT key, value FROM meta"))
        row = conn.execute(
            "SELECT chunk_id, path, status, date, tags, vector FROM vectors"
        ).fetchone()
    assert meta == {"model_id": MODEL, "dim": str(DIM)}
    assert row[:5] == ("a.md#0", "a.md", "active", "2024-01-02", '["x", "x/y"]')
    assert np.frombuffer(row[5], dtype=np.float32) == pytest.approx(v / 3, abs=1e-6)


def test_search_sees_writes_made_after_the_matrix_loaded(store: LocalFileStore) -> None:
    a, b, c = unit(np.random.default_rng(1), 3)
    store.upsert([VectorRecord("a#0", "a.md", a)])
    assert store.search(a, 5)[0][0] == "a#0"  # loads the matrix
    store.upsert([VectorRecord("b#0", "b.md", b), VectorRecord("a#0", "a.md", c)])
    store.delete_paths(["b.md"])
    store.upsert([VectorRecord("d#0", "d.md", b)])  # reuses the freed row
    assert next(h[0] for h in store.search(c, 5)) == "a#0"
    assert store.search(c, 5)[0][1] == pytest.approx(1.0, abs=1e-5)
    assert {h[0] for h in store.search(b, 5)} == {"a#0", "d#0"}
    assert store.search(b, 1)[0][0] == "d#0"


def test_nan_and_zero_vectors_are_refused(store: LocalFileStore) -> None:
    with pytest.raises(RemeError, match="NaN"):
        store.upsert([VectorRecord("a#0", "a.md", np.full(DIM, np.nan, dtype=np.float32))])
    with pytest.raises(RemeError, match="zeros"):
        store.search(np.zeros(DIM, dtype=np.float32), 3)


def test_unknown_path_patterns_match_nothing(store: LocalFileStore) -> None:
    v = unit(np.random.default_rng(2), 1)[0]
    store.upsert([VectorRecord("a#0", "a/b.md", v)])
    assert store.search(v, 3, SearchFilters(paths=["../a"])) == []
    assert store.search(v, 3, SearchFilters(paths=["a"])) == [("a#0", pytest.approx(1.0))]


def test_stats(store: LocalFileStore) -> None:
    store.upsert([VectorRecord("a#0", "a.md", unit(np.random.default_rng(3), 1)[0])])
    assert store.stats() == {"vectors": 1, "model_id": MODEL, "dim": DIM}


def test_settings_reject_unknown_keys_and_paths() -> None:
    with pytest.raises(ValidationError):
        LocalFileStore.Settings(path="x")  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="plain file name"):
        LocalFileStore.Settings(filename="../v.db")


def test_needs_a_context() -> None:
    with pytest.raises(PluginError, match="state_dir"):
        LocalFileStore()
