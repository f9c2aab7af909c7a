"""Chunk texts kept as spans of their notes: read back checked, never stale; older catalogs move."""

from __future__ import annotations

import logging
import os
import sqlite3
from pathlib import Path

import pytest
from conftest import KEYWORD_ONLY_ENV

from reme_core.index import spans
from reme_core.index.catalog import SCHEMA_VERSION, Catalog
from reme_core.plugins import Plugins
from reme_core.runtime import Reme
from reme_core.schema import Chunk, NoteSummary

NOTE_PATH = "digest/wiki/otter.md"
NOTE = "---\nname: Otter\n---\n# Otter\n\nOtters hold hands.\n\n## Food\n\nSea urchins.\n"


def _chunks(path: str) -> list[Chunk]:
    return [
        Chunk(path=path, ordinal=0, start_line=4, end_line=6, text="Otter\nOtters hold hands.",
              heading="Otter"),
        Chunk(path=path, ordinal=1, start_line=8, end_line=10,
              text="Otter > Food\nSea urchins.", heading="Otter > Food"),
        Chunk(path=path, ordinal=2, start_line=1, end_line=1, text="rendered, not in the note"),
    ]  # fmt: skip


def _stored(db: Path) -> dict[int, str | None]:
    with sqlite3.connect(db) as conn:
        return dict(conn.execute("SELECT ordinal, text FROM chunks"))


@pytest.fixture
def notes(tmp_path: Path) -> dict[str, str]:
    return {"a.md": NOTE}


@pytest.fixture
def catalog(tmp_path: Path, notes: dict[str, str]) -> Catalog:
    opened = Catalog(tmp_path / "catalog.sqlite3")
    opened.attach_note_reader(notes.get)
    return opened


def test_texts_found_in_the_note_are_stored_as_spans_and_read_back(
    catalog: Catalog, tmp_path: Path
) -> None:
    catalog.put(NoteSummary(path="a.md", content_hash="h", size=1), _chunks("a.md"), text=NOTE)
    # Only the text that is no piece of the note is stored whole.
    assert _stored(tmp_path / "catalog.sqlite3") == {
        0: None,
        1: None,
        2: "rendered, not in the note",
    }
    expected = {c.id: c.text for c in _chunks("a.md")}
    assert catalog.chunk_texts(list(expected)) == expected
    assert {cid: c.text for cid, c in catalog.chunks(list(expected)).items()} == expected
    assert [text for _, _, text in catalog.chunk_rows()] == list(expected.values())
    rows = catalog.hit_rows(["a.md#1"])
    assert rows["a.md#1"].text == "Otter > Food\nSea urchins." and rows["a.md#1"].end_line == 10
    digests = {cid: digest for cid, _, digest in catalog.chunk_hashes()}
    assert digests == {cid: spans.digest(text).hex() for cid, text in expected.items()}


def test_a_note_edited_since_indexing_never_yields_a_wrong_text(
    catalog: Catalog, notes: dict[str, str]
) -> None:
    catalog.put(NoteSummary(path="a.md", content_hash="h", size=1), _chunks("a.md"), text=NOTE)
    # An edit above the chunks shifts every span: nothing may be served from the new text...
    notes["a.md"] = NOTE.replace("# Otter\n", "# Otter\n\nA new first paragraph.\n")
    assert catalog.hit_rows(["a.md#0", "a.md#1"]) == {}
    assert catalog.chunk_texts(["a.md#0", "a.md#1", "a.md#2"]) == {
        "a.md#2": "rendered, not in the note"
    }
    # ... nor once the note is gone; its ids are still the catalog's (drift compares ids).
    del notes["a.md"]
    assert catalog.chunks(["a.md#0"]) == {}
    assert catalog.all_chunk_ids() == {"a.md#0", "a.md#1", "a.md#2"}


def test_without_a_note_reader_texts_are_stored_whole(tmp_path: Path) -> None:
    catalog = Catalog(tmp_path / "catalog.sqlite3")
    catalog.put(NoteSummary(path="a.md", content_hash="h", size=1), _chunks("a.md"), text=NOTE)
    assert None not in _stored(tmp_path / "catalog.sqlite3").values()
    assert catalog.chunk_texts(["a.md#0"]) == {"a.md#0": "Otter\nOtters hold hands."}


_V2_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE notes (
    path TEXT PRIMARY KEY, content_hash TEXT NOT NULL, size INTEGER NOT NULL, name TEXT,
    description TEXT, status TEXT NOT NULL DEFAULT 'active', date TEXT,
    tags TEXT NOT NULL DEFAULT '[]', frontmatter TEXT NOT NULL DEFAULT '{}',
    mtime_ns INTEGER, ctime_ns INTEGER, inode INTEGER
);
CREATE TABLE chunks (
    id TEXT PRIMARY KEY,
    path TEXT NOT NULL REFERENCES notes(path) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL, start_line INTEGER NOT NULL, end_line INTEGER NOT NULL,
    heading TEXT NOT NULL DEFAULT '', text TEXT NOT NULL
);
CREATE INDEX chunks_path_id ON chunks(path, id);
INSERT INTO meta VALUES ('schema_version', '2');
INSERT INTO notes(path, content_hash, size, name) VALUES ('a.md', 'h', 1, 'Otter');
INSERT INTO chunks VALUES ('a.md#0', 'a.md', 0, 4, 6, 'Otter', 'Otter\nOtters hold hands.');
INSERT INTO chunks VALUES ('a.md#1', 'a.md', 1, 8, 10, 'Otter > Food', 'old text, kept');
"""


def test_a_schema_2_catalog_moves_its_chunks_and_keeps_serving_them(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "catalog.sqlite3"
    with sqlite3.connect(db) as conn:
        conn.executescript(_V2_SCHEMA)
    with caplog.at_level(logging.INFO, logger="reme_core.index.catalog"):
        catalog = Catalog(db)
    assert "chunks moved to schema 3" in caplog.text
    catalog.attach_note_reader(lambda path: None)  # texts moved over need no note
    assert catalog.chunk_texts(["a.md#0", "a.md#1"]) == {
        "a.md#0": "Otter\nOtters hold hands.",
        "a.md#1": "old text, kept",
    }
    assert catalog.hit_rows(["a.md#1"])["a.md#1"].name == "Otter"
    assert catalog.chunk_ids_by_path() == {"a.md": ["a.md#0", "a.md#1"]}
    catalog.close()
    with sqlite3.connect(db) as conn:
        version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        columns = {row[1] for row in conn.execute("PRAGMA table_info(chunks)")}
    assert version == (str(SCHEMA_VERSION),) and "id" not in columns
    Catalog(db).close()  # opening again moves nothing


def test_search_over_an_edited_note_serves_no_stale_text(
    workspace: Path, default_plugins: Plugins
) -> None:
    note = workspace / NOTE_PATH
    note.write_text("# Otter\n\nThe otter cracks urchins on a stone.\n", "utf-8")
    with Reme.open(workspace, plugins=default_plugins, env=KEYWORD_ONLY_ENV) as reme:
        reme.index()
        hits = reme.search("otter urchins", limit=3, expand=False).hits
        assert hits[0].path == "digest/wiki/otter.md" and "cracks urchins" in hits[0].text
        # Edited in an editor, not indexed yet: the old text is no longer the note's.
        note.write_text("# Otter\n\nAdded above.\n\nThe otter floats on urchins.\n", "utf-8")
        hits = reme.search("otter urchins", limit=3, expand=False).hits
        current = note.read_text("utf-8")
        assert all(h.text.split("\n", 1)[-1] in current for h in hits if h.path == NOTE_PATH)
        assert all("cracks" not in h.text for h in hits)
        reme.index()
        hits = reme.search("otter urchins", limit=3, expand=False).hits
        assert hits[0].path == "digest/wiki/otter.md" and "floats on urchins" in hits[0].text


def test_search_reads_no_note_through_a_link_out_of_the_workspace_nor_a_fifo(
    workspace: Path, default_plugins: Plugins, tmp_path: Path
) -> None:
    note = workspace / NOTE_PATH
    text = "# Otter\n\nThe otter cracks urchins on a stone.\n"
    note.write_text(text, "utf-8")
    with Reme.open(workspace, plugins=default_plugins, env=KEYWORD_ONLY_ENV) as reme:
        reme.index()
        assert [h.path for h in reme.search("otter urchins", limit=1, expand=False).hits] == [
            NOTE_PATH
        ]
        # The same bytes, but outside the workspace: never read through the link.
        outside = tmp_path / "outside.md"
        outside.write_text(text, "utf-8")
        note.unlink()
        note.symlink_to(outside)
        assert NOTE_PATH not in {h.path for h in reme.search("otter urchins", expand=False).hits}
        note.unlink()
        os.mkfifo(note)  # opening it to read would wait for a writer
        assert NOTE_PATH not in {h.path for h in reme.search("otter urchins", expand=False).hits}


def test_a_rebuild_gives_back_the_pages_stored_texts_held(tmp_path: Path) -> None:
    db = tmp_path / "catalog.sqlite3"
    catalog = Catalog(db)  # no note reader yet: texts stored whole, as a schema-2 catalog's
    body = "\n\n".join(f"Paragraph {i} about otters and their stones." for i in range(60))
    notes = {f"n{i:03d}.md": f"# Otter\n\n{body} {i}\n" for i in range(300)}

    def put_all() -> None:
        catalog.begin_pass(notes, rebuild=True)
        catalog.clear()
        for path, text in notes.items():
            chunk = Chunk(path=path, ordinal=0, start_line=3, end_line=121, text=text[9:-1])
            catalog.put(NoteSummary(path=path, content_hash="h", size=1), [chunk], text=text)
        catalog.end_pass(notes, rebuild=True)

    put_all()
    stored = db.stat().st_size
    catalog.attach_note_reader(notes.get)
    put_all()  # the rebuild `reme reindex` runs: spans now
    catalog.close()
    assert db.stat().st_size < stored / 4
