"""One chunk the embedding model or the vector store refuses never fails the batch around it
(issue 20, defect 3): the others are stored, the refused one is a ``status`` problem, and the
vectors are not left ``incomplete`` for the rest, across restarts too."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FAKE_VECTORS, copy_example

from reme_core.errors import EmbeddingError
from reme_core.runtime import Reme
from reme_plugins.vector_filters import VectorStoreError

POISON = "digest/wiki/poison.md"
HASH_ZVEC = ["components.embedding.name=hash", "components.file_store.name=zvec"]


def _vectors_ok(reme: Reme) -> dict:
    vectors = reme.status()["vectors"]
    assert vectors["state"] == "ready", vectors
    assert vectors["embedded"] == vectors["total"] > 0
    assert vectors["refused"] == 1
    assert vectors["last_error"] is None
    return vectors


def _poison_note(root: Path) -> None:
    (root / POISON).write_text("# Poison\nzebracorn nightshade\n", encoding="utf-8")


def test_a_text_the_model_refuses_costs_only_its_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = copy_example(tmp_path / "ws")
    _poison_note(root)
    with Reme.open(root, overrides=FAKE_VECTORS) as reme:
        real = reme.vectors.embedding.embed_passages

        def refusing(texts):
            if any("nightshade" in t for t in texts):
                raise EmbeddingError("the model cannot take this text")
            return real(texts)

        monkeypatch.setattr(reme.vectors.embedding, "embed_passages", refusing)
        reme.index()
        _vectors_ok(reme)
        problem = reme.status()["problems"][POISON]
        assert problem.startswith("vectors: chunk ") and "model cannot take" in problem
        hits = reme.search("postgres tuning").hits
        assert hits and any(h.arm_ranks.get("vector") for h in hits)
        # The note is still found by keyword, and search says one chunk has no vector.
        found = reme.search("zebracorn")
        assert found.hits[0].path == POISON
        assert any("1 chunk(s) refused" in d for d in found.degraded)
    with Reme.open(root, overrides=FAKE_VECTORS) as reme:  # a restart: nothing pending
        reme.index()
        _vectors_ok(reme)
        # The cause is gone once the note changes: its chunk is embedded, the problem forgotten.
        reme.files.write(POISON, "# Poison\nzebracorn, harmless now\n")
        vectors = reme.status()["vectors"]
        assert vectors["refused"] == 0 and vectors["embedded"] == vectors["total"]
        assert POISON not in reme.status()["problems"]


def test_a_chunk_the_store_refuses_costs_only_its_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = copy_example(tmp_path / "ws")
    _poison_note(root)
    with Reme.open(root, overrides=FAKE_VECTORS) as reme:
        real = reme.vectors.store.upsert

        def refusing(records):
            if any(r.path == POISON for r in records):
                raise VectorStoreError("invalid id")
            return real(records)

        monkeypatch.setattr(reme.vectors.store, "upsert", refusing)
        reme.index()
        _vectors_ok(reme)
        assert "vector store refused it: invalid id" in reme.status()["problems"][POISON]


def test_a_store_that_refuses_everything_leaves_the_work_pending(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every chunk failing alone is the store failing, not the chunks: nothing is marked
    refused for good, and the next pass retries."""
    with Reme.open(copy_example(tmp_path / "ws"), overrides=FAKE_VECTORS) as reme:
        real = reme.vectors.store.upsert

        def down(records):
            raise VectorStoreError("disk full")

        monkeypatch.setattr(reme.vectors.store, "upsert", down)
        reme.index()
        vectors = reme.status()["vectors"]
        assert vectors["state"] == "incomplete" and vectors["refused"] == 0
        assert "disk full" in vectors["last_error"]
        monkeypatch.setattr(reme.vectors.store, "upsert", real)
        reme.index()
        vectors = reme.status()["vectors"]
        assert vectors["state"] == "ready" and vectors["embedded"] == vectors["total"]


def test_real_zvec_refusing_a_newline_in_an_id_spares_the_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """zvec refuses ids with a newline, tab or NUL. The name rules now keep such notes out, so
    this is a catalog indexed before them: the rules are lifted to index one."""
    root = copy_example(tmp_path / "ws")
    bad = "digest/wiki/new\nline.md"
    (root / bad).write_text("# New line\nzebracorn\n", encoding="utf-8")
    with Reme.open(root, overrides=HASH_ZVEC) as reme:
        with monkeypatch.context() as lifted:
            lifted.setattr(reme.indexer.paths, "refusal", lambda rel: None)
            reme.index()
        _vectors_ok(reme)
        problem = reme.status()["problems"][bad]
        assert "vector store refused it" in problem and "newline" in problem
        assert any(h.arm_ranks.get("vector") for h in reme.search("postgres tuning").hits)
    with Reme.open(root, overrides=HASH_ZVEC) as reme:  # across a restart
        assert reme.status()["vectors"]["state"] == "ready"
