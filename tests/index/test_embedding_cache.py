from __future__ import annotations

from pathlib import Path

import numpy as np

from reme_core.index.embedding_cache import EmbeddingCache


def test_vectors_round_trip_per_model(tmp_path: Path):
    cache = EmbeddingCache(tmp_path / "e.sqlite3")
    cache.put("m1", {"h1": np.array([1, 0], dtype=np.float32)})
    assert cache.get("m1", ["h1", "h2"]).keys() == {"h1"}
    assert cache.get("m2", ["h1"]) == {}
    cache.close()
    reopened = EmbeddingCache(tmp_path / "e.sqlite3")
    np.testing.assert_array_equal(reopened.get("m1", ["h1"])["h1"], [1, 0])


def test_unmark_paths_removes_exactly_those_files(tmp_path: Path):
    cache = EmbeddingCache(tmp_path / "e.sqlite3")
    ids = ["a.md#0", "a.md#11", "a.mdx#0", "b/a.md#0", "a.m#0"]
    cache.mark_stored("m", {cid: "h" for cid in ids})
    cache.unmark_paths(["a.md"])
    assert set(cache.stored("m")) == {"a.mdx#0", "b/a.md#0", "a.m#0"}


def test_other_models_are_forgotten(tmp_path: Path):
    cache = EmbeddingCache(tmp_path / "e.sqlite3")
    cache.mark_stored("old", {"a.md#0": "h"})
    cache.mark_stored("new", {"b.md#0": "h"})
    cache.forget_other_models("new")
    assert cache.stored("old") == {} and cache.stored("new") == {"b.md#0": "h"}
