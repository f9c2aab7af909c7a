"""The drift seal: a no-op ``reme index`` skips comparing every chunk id only while the state
files are exactly as they were when the projections last agreed (``reme_core.index.seal``).

Each test changes the state the way a person or a crash would (a file deleted, a row edited with
sqlite3 while reme is closed or open, a process killed) and checks that the next index still
finds and repairs it; the others check that the shortcut is taken when nothing changed.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

import pytest
from conftest import FAKE_VECTORS

from reme_core.errors import EmbeddingError
from reme_core.index import seal
from reme_core.plugins import Plugins
from reme_core.runtime import Reme
from tests.index.test_drift import NOTE, run_killed

PERF = "daily/2026-11-10/session-perf-tuning.md"
"""A note of the example workspace with tags and several chunks."""


def open_ws(root: Path, plugins: Plugins) -> Reme:
    return Reme.open(root, plugins=plugins, env={}, overrides=FAKE_VECTORS)


def indexed(root: Path, plugins: Plugins) -> None:
    """Index ``root`` and close it: the seal is on disk."""
    with open_ws(root, plugins) as reme:
        reme.index()
        # Embedding wrote the vector store outside the index pass: the seal no longer held,
        # and the next pass checks in full, then seals (its vector pass finds nothing to do).
        assert not reme.indexer.seal_holds()
        reme.index()
        assert reme.indexer.seal_holds()
        assert reme.status()["drift"]["found"] is False
    assert (root / ".reme" / seal.SEAL_FILE).exists()


def compared_ids(reme: Reme, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A counter of full drift checks (each reads every chunk id of the catalog)."""
    calls: list[int] = []
    read = reme.catalog.all_chunk_ids

    def counted() -> set[str]:
        calls.append(1)
        return read()

    monkeypatch.setattr(reme.catalog, "all_chunk_ids", counted)
    return calls


def state_stats(root: Path) -> dict[str, tuple[int, int, int]]:
    return {
        p.relative_to(root).as_posix(): (p.stat().st_size, p.stat().st_mtime_ns, p.stat().st_ino)
        for p in (root / ".reme").rglob("*")
        if p.is_file() and not p.name.endswith("-shm")
    }


def test_a_no_op_index_after_a_clean_close_skips_the_id_comparison(
    workspace: Path, default_plugins: Plugins, monkeypatch: pytest.MonkeyPatch
) -> None:
    indexed(workspace, default_plugins)
    with open_ws(workspace, default_plugins) as reme:
        assert reme.indexer.seal_holds()
        calls = compared_ids(reme, monkeypatch)
        report = reme.index()
        assert report.indexed == report.removed == report.repaired == report.drift == []
        assert calls == []  # sealed: no id was read
        # A note edited meanwhile is still found by its stat, whatever the seal says.
        (workspace / NOTE).write_text("# Sealed\n\nThe okapisealed grazes.\n")
        assert reme.index().indexed == [NOTE]
        assert calls == []  # the seal followed reme's own pass
        assert reme.search("okapisealed").hits[0].path == NOTE
        # status always checks in full.
        assert reme.status()["drift"]["found"] is False and calls == [1]


def test_opening_and_searching_write_nothing_under_reme(
    workspace: Path, default_plugins: Plugins
) -> None:
    indexed(workspace, default_plugins)
    before = state_stats(workspace)
    with open_ws(workspace, default_plugins) as reme:
        reme.search("shared_buffers")
        reme.index()
        assert reme.indexer.seal_holds()
    assert state_stats(workspace) == before


def test_a_deleted_projection_file_is_found_and_repaired(
    workspace: Path, default_plugins: Plugins
) -> None:
    indexed(workspace, default_plugins)
    (workspace / ".reme" / "tags.sqlite3").unlink()
    with open_ws(workspace, default_plugins) as reme:
        assert not reme.indexer.seal_holds()
        report = reme.index()
        assert PERF in report.repaired
        assert any(line.startswith("tag index:") for line in report.drift)
        assert reme.status()["drift"]["found"] is False
        assert reme.tags.tags(PERF)


def test_a_row_edited_with_sqlite3_while_closed_is_found_and_repaired(
    workspace: Path, default_plugins: Plugins
) -> None:
    indexed(workspace, default_plugins)
    db = sqlite3.connect(workspace / ".reme" / "bm25s" / "rows.sqlite3")
    with db:
        db.execute("DELETE FROM chunks WHERE id LIKE ?", (f"{PERF}#%",))
    db.close()
    with open_ws(workspace, default_plugins) as reme:
        report = reme.index()
        assert report.repaired == [PERF]
        assert any(line.startswith("keyword index:") for line in report.drift)
        assert PERF in {h.path for h in reme.search("shared_buffers", limit=20).hits}


def test_a_row_edited_while_reme_is_open_is_found_by_the_next_index(
    workspace: Path, default_plugins: Plugins
) -> None:
    indexed(workspace, default_plugins)
    with open_ws(workspace, default_plugins) as reme:
        assert reme.index().repaired == []
        db = sqlite3.connect(workspace / ".reme" / "graph.sqlite3")
        with db:
            db.execute(
                "INSERT INTO links VALUES ('gone/old.md', 0, 'x', NULL, NULL, NULL, 0, 1, 'missing')"
            )
        db.close()
        report = reme.index()
        assert report.repaired == ["gone/old.md"]
        assert any(line.startswith("link graph:") for line in report.drift)
        assert reme.index().repaired == []


def test_an_edit_made_while_open_and_never_checked_is_not_sealed_at_close(
    workspace: Path, default_plugins: Plugins
) -> None:
    indexed(workspace, default_plugins)
    with open_ws(workspace, default_plugins) as reme:
        db = sqlite3.connect(workspace / ".reme" / "tags.sqlite3")
        with db:
            db.execute("INSERT INTO tags VALUES ('gone/old.md', 'stale')")
        db.close()
    # Closing folded that write into the file; the seal it had loaded no longer held.
    assert not (workspace / ".reme" / seal.SEAL_FILE).exists()
    with open_ws(workspace, default_plugins) as reme:
        report = reme.index()
        assert report.repaired == ["gone/old.md"]
        assert reme.status()["drift"]["found"] is False


def test_a_process_killed_mid_pass_leaves_no_seal_that_holds(
    workspace: Path, default_plugins: Plugins
) -> None:
    (workspace / NOTE).write_text("# Drift\n\nThe walrusold lives here.\n")
    indexed(workspace, default_plugins)
    run_killed(workspace, "flush", NOTE, "# Drift\n\nThe narwhalnew lives here.\n")
    with open_ws(workspace, default_plugins) as reme:
        assert not reme.indexer.seal_holds()
        assert reme.index().repaired == [NOTE]
        assert [c for c, _ in reme.keyword.search("narwhalnew", 5)] == [f"{NOTE}#0"]


def test_a_projection_that_cannot_name_its_files_is_always_compared(
    workspace: Path, default_plugins: Plugins, monkeypatch: pytest.MonkeyPatch
) -> None:
    indexed(workspace, default_plugins)
    with open_ws(workspace, default_plugins) as reme:
        monkeypatch.setattr(reme.graph, "state_files", lambda: None)
        calls = compared_ids(reme, monkeypatch)
        reme.index()
        reme.index()
        assert calls == [1, 1]
        assert not reme.indexer.seal_holds()
    assert not (workspace / ".reme" / seal.SEAL_FILE).exists()


def test_the_seal_covers_folders_and_sqlite_logs_and_drops_racy_entries(tmp_path: Path) -> None:
    state = tmp_path / ".reme"
    (state / "index").mkdir(parents=True)
    (state / "index" / "part.bin").write_bytes(b"x")
    (state / "db.sqlite3").write_bytes(b"db")
    (state / "db.sqlite3-shm").write_bytes(b"shm")  # readers write it: never sealed
    (state / "db.sqlite3-wal").write_bytes(b"")  # an empty log holds nothing
    files = [state / "index", state / "db.sqlite3", state / "missing.sqlite3"]
    taken = seal.take(state, files)
    assert [e[0] for e in taken] == ["db.sqlite3", "index/part.bin", "missing.sqlite3"]
    assert taken[2][1] == -1
    (state / "db.sqlite3-wal").write_bytes(b"frame")
    assert seal.take(state, files) != taken

    assert seal.save(state, taken, {"a.md": (1, 2, 3, 4)}, vectors="model-a") is True
    saved = seal.load(state)
    assert saved is not None and saved.files == taken and saved.vectors == "model-a"
    assert seal.load_stamps(state, saved.stamps or "") == {"a.md": (1, 2, 3, 4)}
    # An entry as new as the seal file could change again within the same tick unseen.
    future = time.time_ns() + 3600 * 10**9
    os.utime(state / "db.sqlite3", ns=(future, future))
    assert seal.save(state, seal.take(state, files)) is False
    assert seal.load(state) is None and not (state / seal.STAMPS_FILE).exists()
    (state / seal.SEAL_FILE).write_text("{not json")
    assert seal.load(state) is None


def test_the_catalogs_stamps_saved_with_the_seal_serve_the_next_scan(
    workspace: Path, default_plugins: Plugins, monkeypatch: pytest.MonkeyPatch
) -> None:
    indexed(workspace, default_plugins)
    with open_ws(workspace, default_plugins) as reme:
        saved = seal.load(workspace / ".reme")
        assert saved is not None and saved.stamps is not None
        assert seal.load_stamps(workspace / ".reme", saved.stamps) == reme.catalog.file_stamps()
        read: list[int] = []
        monkeypatch.setattr(reme.catalog, "file_stamps", lambda: read.append(1) or {})
        assert reme.index().indexed == [] and read == []
        # Edited: the stamps change with the catalog, and are read from it again.
        (workspace / NOTE).write_text("# Stamped\n\nThe ibexstamped climbs.\n")
        monkeypatch.undo()
        assert reme.index().indexed == [NOTE]
        assert reme.index().indexed == []
    # A stamps file that is not the one the seal names is not used: the catalog is read.
    (workspace / ".reme" / seal.STAMPS_FILE).write_bytes(b"\x00garbage")
    with open_ws(workspace, default_plugins) as reme:
        assert reme.indexer.seal_holds()
        (workspace / NOTE).write_text("# Stamped\n\nThe ibexagain climbs.\n")
        assert reme.index().indexed == [NOTE]


def vector_passes(reme: Reme, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A counter of vector passes that compared the store with the catalog."""
    assert reme.vectors is not None
    calls: list[int] = []
    run = reme.vectors._reconcile

    def counted(progress: object) -> int:
        calls.append(1)
        return run(progress)

    monkeypatch.setattr(reme.vectors, "_reconcile", counted)
    return calls


def test_vectors_that_matched_under_the_seal_need_no_vector_pass(
    workspace: Path, default_plugins: Plugins, monkeypatch: pytest.MonkeyPatch
) -> None:
    indexed(workspace, default_plugins)
    saved = seal.load(workspace / ".reme")
    assert saved is not None and saved.vectors == "hash-64"
    with open_ws(workspace, default_plugins) as reme:
        passes = vector_passes(reme, monkeypatch)
        reme.index()
        assert passes == []
        # A write: the next index compares again, then the vectors are settled once more.
        (workspace / NOTE).write_text("# Vectors\n\nThe tapirvector naps.\n")
        assert reme.index().indexed == [NOTE]
        assert passes == [1]
        reme.index()
        reme.index()
        assert passes == [1, 1]
        assert reme.search("tapirvector").hits[0].arm_ranks.get("vector") is not None


def test_a_vector_deleted_while_closed_is_embedded_again(
    workspace: Path, default_plugins: Plugins
) -> None:
    indexed(workspace, default_plugins)
    db = sqlite3.connect(workspace / ".reme" / "vectors.sqlite3")
    with db:
        db.execute("DELETE FROM vectors WHERE path = ?", (PERF,))
    db.close()
    with open_ws(workspace, default_plugins) as reme:
        assert reme.vectors is not None
        assert not reme.indexer.vectors_settled()
        reme.index()
        assert {cid for cid in reme.vectors.store.ids() if cid.startswith(PERF)}
        assert reme.status()["drift"]["found"] is False


def test_a_state_file_its_component_rewrites_on_close_is_sealed_as_closed(
    workspace: Path, default_plugins: Plugins, monkeypatch: pytest.MonkeyPatch
) -> None:
    """zvec rewrites its vector index file whenever it closes, changes or not: the seal saved
    at close is taken after that, so the next process still finds it intact."""
    indexed(workspace, default_plugins)
    for _ in range(2):
        with open_ws(workspace, default_plugins) as reme:
            assert reme.indexer.seal_holds()
            close = reme.tags.close
            tags_file = workspace / ".reme" / "tags.sqlite3"

            def touching_close(close=close, tags_file=tags_file) -> None:
                close()
                os.utime(tags_file, ns=(time.time_ns(), time.time_ns()))

            monkeypatch.setattr(reme.tags, "close", touching_close)
    with open_ws(workspace, default_plugins) as reme:
        assert reme.indexer.seal_holds()


def test_a_write_during_the_vector_pass_keeps_the_next_one(
    workspace: Path, default_plugins: Plugins, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write whose embedding failed while a vector pass ran leaves work that pass never saw:
    the pass finding nothing to do must not mark the vectors as matching."""
    indexed(workspace, default_plugins)
    with open_ws(workspace, default_plugins) as reme:
        assert reme.vectors is not None
        reme.files.write(NOTE, "# Race\n\nThe okapirace runs.\n")  # embedded as it is written
        assert not reme.indexer.vectors_settled()
        compare = reme.vectors._reconcile

        def compare_then_write(progress: object) -> int:
            done = compare(progress)
            assert reme.vectors is not None and reme.vectors.matched  # nothing left to do
            monkeypatch.setattr(
                reme.vectors.embedding,
                "embed_passages",
                lambda texts: (_ for _ in ()).throw(EmbeddingError("model down")),
            )
            # The write goes on without its vectors, which stay pending for the next pass.
            reme.files.write(NOTE, "# Race\n\nThe okapilater runs.\n")
            assert reme.vectors.last_error == "model down"
            return done

        monkeypatch.setattr(reme.vectors, "_reconcile", compare_then_write)
        reme.index()
        assert not reme.indexer.vectors_settled()
        monkeypatch.undo()
        reme.index()  # the model is back: the next pass embeds the note, then matches
        assert reme.search("okapilater").hits[0].arm_ranks.get("vector") is not None


def test_a_background_vector_pass_that_matches_settles_the_vectors_too(
    workspace: Path, default_plugins: Plugins, monkeypatch: pytest.MonkeyPatch
) -> None:
    indexed(workspace, default_plugins)
    with open_ws(workspace, default_plugins) as reme:
        assert reme.vectors is not None
        passes = vector_passes(reme, monkeypatch)
        reme.files.write(NOTE, "# Background\n\nThe quaggaback grazes.\n")  # embedded here
        reme.index(vectors="background")  # the server's way: the pass runs on a thread
        assert reme.vectors._thread is not None
        reme.vectors._thread.join()
        assert passes == [1] and reme.indexer.vectors_settled()
        reme.index(vectors="background")
        reme.vectors._thread.join()
        assert passes == [1]
