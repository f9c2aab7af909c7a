"""The watcher indexes edits made outside the API (files written straight to disk)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import KEYWORD_ONLY_ENV

from reme_core.index.indexer import IndexReport
from reme_core.index.watcher import Watcher
from reme_core.plugins import Plugins
from reme_core.runtime import Reme
from reme_core.workspace import init_workspace

TIMEOUT = 10.0


def wait_for(condition: Callable[[], bool], timeout: float = TIMEOUT) -> bool:
    """Poll ``condition`` until it holds or ``timeout`` seconds pass; return whether it held."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


@pytest.fixture
def reme(tmp_path: Path, default_plugins: Plugins) -> Iterator[Reme]:
    root = tmp_path / "ws"
    init_workspace(root)
    (root / "digest/wiki/existing.md").write_text("# Existing\n\nplatypus\n", "utf-8")
    with Reme.open(
        root,
        plugins=default_plugins,
        env=KEYWORD_ONLY_ENV,
        overrides=["index.watch_debounce_seconds=0.05"],
    ) as opened:
        opened.index()
        yield opened


def found(reme: Reme, query: str) -> set[str]:
    return {hit.path for hit in reme.search(query, expand=False).hits}


def test_watcher_indexes_files_written_and_deleted_on_disk(reme: Reme) -> None:
    reports: list[IndexReport] = []
    watcher = reme.watch(on_report=reports.append)
    try:
        assert watcher.debounce == 0.05
        note = reme.root / "digest/wiki/pangolin.md"
        note.write_text(
            "---\ntags: [animals]\n---\n# Pangolin\n\nThe pangolin rolls up.\n", "utf-8"
        )
        assert wait_for(lambda: found(reme, "pangolin") == {"digest/wiki/pangolin.md"})
        assert reme.tags.paths(["animals"]) == {"digest/wiki/pangolin.md"}

        note.write_text("# Pangolin\n\nNow about scales only.\n", "utf-8")
        assert wait_for(lambda: found(reme, "pangolin scales") == {"digest/wiki/pangolin.md"})
        assert wait_for(lambda: reme.tags.paths(["animals"]) == set())

        note.unlink()
        # Search drops a vanished note's hits at once (its text is read from the note); the
        # watcher then removes it from the catalog.
        assert wait_for(lambda: reme.catalog.note("digest/wiki/pangolin.md") is None)
        assert found(reme, "pangolin") == set()
        assert found(reme, "platypus") == {"digest/wiki/existing.md"}
    finally:
        watcher.stop()
    assert watcher.errors == []
    assert any("digest/wiki/pangolin.md" in r.indexed for r in reports)
    assert any("digest/wiki/pangolin.md" in r.removed for r in reports)


def test_watcher_follows_a_rename_and_ignores_excluded_files(reme: Reme) -> None:
    watcher = reme.watch()
    try:
        source = reme.root / "digest/wiki/existing.md"
        target = reme.root / "digest/wiki/renamed.md"
        source.rename(target)
        assert wait_for(lambda: found(reme, "platypus") == {"digest/wiki/renamed.md"})
        assert reme.catalog.note("digest/wiki/existing.md") is None

        (reme.root / ".obsidian").mkdir()
        (reme.root / ".obsidian/cache.md").write_text("# Cache\n\nplatypus cache\n", "utf-8")
        (reme.root / "digest/wiki/marker.md").write_text("# Marker\n\nechidna\n", "utf-8")
        # Once a later file is indexed, the hidden one has been seen and skipped.
        assert wait_for(lambda: found(reme, "echidna") == {"digest/wiki/marker.md"})
        assert found(reme, "cache") == set()
    finally:
        watcher.stop()
    assert watcher.errors == []


def test_watcher_stop_flushes_pending_events(tmp_path: Path) -> None:
    batches: list[list[str]] = []
    root = tmp_path / "ws"
    root.mkdir()
    watcher = Watcher(root, batches.append, debounce=60.0)  # never fires on its own
    watcher.start()
    try:
        (root / "note.md").write_text("hello\n", "utf-8")
        (root / ".reme").mkdir()
        (root / ".reme/state.md").write_text("derived\n", "utf-8")
        assert wait_for(lambda: "note.md" in watcher._pending)
    finally:
        watcher.stop()
    assert batches and "note.md" in batches[0]
    assert not any(path.startswith(".reme") for batch in batches for path in batch)


def test_reading_a_file_is_not_an_edit(tmp_path: Path) -> None:
    """Indexing reads each file it is handed; if opening one for reading counted as an edit,
    every pass would schedule the next one forever (and two watchers would feed each other)."""
    batches: list[list[str]] = []
    root = tmp_path / "ws"
    root.mkdir()
    (root / "read.md").write_text("# Read\n", "utf-8")
    watcher = Watcher(root, batches.append, debounce=60.0)  # never fires on its own
    watcher.start()
    try:
        assert (root / "read.md").read_text("utf-8") == "# Read\n"
        (root / "marker.md").write_text("# Marker\n", "utf-8")
        # Events arrive in order: once the later write is seen, so would the read have been.
        assert wait_for(lambda: "marker.md" in watcher._pending)
    finally:
        watcher.stop()
    assert batches == [["marker.md"]]
