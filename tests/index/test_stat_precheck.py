"""A scan reads only files whose stat changed; content hashes still decide what is re-indexed.

The catalog records each file's stat (size, mtime, ctime, inode) beside its content hash, once the
stat is older than the timestamp granularity (``RACY_NS``). ``reme index`` skips reading a file
whose stat matches, reads and hashes any other; ``reme reindex`` hashes every file.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from reme_core.index import catalog as catalog_module
from reme_core.index.indexer import Indexer
from reme_core.plugins import Plugins
from reme_core.runtime import Reme

KEYWORD_ONLY = ["components.embedding=null", "components.file_store=null"]
NOTE = "digest/wiki/stat-note.md"


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stats count as settled at once (the tests' files were all written a moment ago)."""
    monkeypatch.setattr(catalog_module, "RACY_NS", 0)


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every path the indexer reads."""
    seen: list[str] = []
    original = Indexer._read

    def counting(self: Indexer, path: str) -> bytes | None:
        seen.append(path)
        return original(self, path)

    monkeypatch.setattr(Indexer, "_read", counting)
    return seen


@pytest.fixture
def reme(workspace: Path, default_plugins: Plugins) -> Iterator[Reme]:
    (workspace / NOTE).write_text("# Stat note\n\nThe okapi sleeps.\n", encoding="utf-8")
    with Reme.open(workspace, plugins=default_plugins, env={}, overrides=KEYWORD_ONLY) as opened:
        yield opened


def _paths(reme: Reme, query: str) -> set[str]:
    return {hit.path for hit in reme.search(query, limit=20).hits}


def test_a_scan_reads_no_file_whose_stat_is_unchanged(
    settled: None, reads: list[str], reme: Reme
) -> None:
    first = reme.index()
    assert NOTE in first.indexed and NOTE in reads
    reads.clear()
    again = reme.index()
    assert reads == []
    assert again.indexed == [] and again.unchanged == len(reme.catalog.hashes())


def test_a_touched_file_is_hashed_once_and_not_reindexed(
    settled: None, reads: list[str], reme: Reme
) -> None:
    reme.index()
    path = reme.root / NOTE
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns - 5_000_000_000))  # a new mtime only
    reads.clear()
    report = reme.index()
    assert reads == [NOTE]  # read and hashed...
    assert report.indexed == []  # ...the same content: nothing to re-index
    reads.clear()
    reme.index()
    assert reads == []  # its new stat was recorded


def test_a_same_size_edit_with_the_old_mtime_is_caught(
    settled: None, reads: list[str], reme: Reme
) -> None:
    """Writing the file changes its ctime, which no tool sets back: the scan reads it."""
    reme.index()
    path = reme.root / NOTE
    before = path.stat()
    path.write_text("# Stat note\n\nThe tapir sleeps.\n", encoding="utf-8")  # same size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    reads.clear()
    report = reme.index()
    assert reads == [NOTE] and report.indexed == [NOTE]
    assert NOTE in _paths(reme, "tapir")


def test_reindex_hashes_every_file_even_when_the_stat_says_unchanged(
    settled: None, reads: list[str], reme: Reme
) -> None:
    """A filesystem that keeps mtime, size, ctime and inode across an edit fools the stat check
    of ``reme index`` (by design it does not read such a file); ``reme reindex`` reads them all."""
    reme.index()
    path = reme.root / NOTE
    path.write_text("# Stat note\n\nThe tapir sleeps.\n", encoding="utf-8")  # same size
    st = path.stat()
    with sqlite3.connect(reme.state_dir / "catalog.sqlite3") as db:  # what such a FS would show
        db.execute(
            "UPDATE notes SET mtime_ns = ?, ctime_ns = ?, inode = ? WHERE path = ?",
            (st.st_mtime_ns, st.st_ctime_ns, st.st_ino, NOTE),
        )
    reads.clear()
    assert reme.index().indexed == []
    assert reads == [] and NOTE not in _paths(reme, "tapir")
    reads.clear()
    report = reme.reindex()
    assert NOTE in reads and len(reads) == len(reme.catalog.hashes())
    assert NOTE in report.indexed and NOTE in _paths(reme, "tapir")


def test_a_file_given_a_second_hard_link_is_read_again_and_refused(
    settled: None, reads: list[str], reme: Reme, tmp_path: Path
) -> None:
    reme.index()
    os.link(reme.root / NOTE, tmp_path / "elsewhere.md")  # stat of NOTE unchanged but nlink
    reads.clear()
    report = reme.index()
    assert NOTE in reads
    assert NOTE in report.problems and "link" in report.problems[NOTE]
    assert NOTE not in _paths(reme, "okapi")


def test_a_file_changed_just_before_the_scan_keeps_no_stat(reads: list[str], reme: Reme) -> None:
    """Within the racy window (default 2 s) the stat is not recorded: the next scan hashes the
    file again rather than trust a stat that a same-tick edit could keep."""
    reme.index()
    states = reme.catalog.file_states()
    assert states[NOTE].stat is None
    reads.clear()
    reme.index()
    assert NOTE in reads


def test_an_old_catalog_gains_stat_columns(
    settled: None, workspace: Path, default_plugins: Plugins
) -> None:
    state = workspace / ".reme"
    with sqlite3.connect(state / "catalog.sqlite3") as db:  # a schema 1 catalog
        db.executescript(
            "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
            "INSERT INTO meta VALUES ('schema_version', '1');"
            "CREATE TABLE notes (path TEXT PRIMARY KEY, content_hash TEXT NOT NULL,"
            " size INTEGER NOT NULL, name TEXT, description TEXT,"
            " status TEXT NOT NULL DEFAULT 'active', date TEXT,"
            " tags TEXT NOT NULL DEFAULT '[]', frontmatter TEXT NOT NULL DEFAULT '{}');"
        )
    with Reme.open(workspace, plugins=default_plugins, env={}, overrides=KEYWORD_ONLY) as reme:
        reme.index()
        assert all(state.stat is not None for state in reme.catalog.file_states().values())


def test_open_neither_scans_nor_loads_the_keyword_index(
    settled: None, workspace: Path, default_plugins: Plugins, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Reme.open(workspace, plugins=default_plugins, env={}, overrides=KEYWORD_ONLY) as reme:
        reme.index()
    (workspace / "digest/wiki/unseen.md").write_text("# Unseen\n\nA quokka.\n", encoding="utf-8")
    scans: list[str] = []
    monkeypatch.setattr(Indexer, "scan", lambda self: scans.append("scan"))
    monkeypatch.setattr(Indexer, "scope_files", lambda self: scans.append("walk") or [])
    reme = Reme.open(workspace, plugins=default_plugins, env={}, overrides=KEYWORD_ONLY)
    try:
        assert scans == []
        assert reme.keyword.stats  # built, but nothing of it read yet:
        assert reme.keyword._loaded is False  # type: ignore[attr-defined]
        assert reme.search("quokka").hits == []  # searches what was indexed; no scan first
        assert scans == []
    finally:
        reme.close()
