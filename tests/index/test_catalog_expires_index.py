"""The catalog's partial index of notes naming ``expires``: added on open to a catalog made
before it, and what ``Catalog.expiring`` reads instead of parsing every note's frontmatter;
``chunked_paths`` is the keys of ``chunk_ids_by_path`` (issue 21)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from reme_core.index.catalog import Catalog
from reme_core.schema import Chunk, NoteSummary

EXPIRING_SQL = "SELECT path FROM notes WHERE json_extract(frontmatter, '$.expires') IS NOT NULL"


def _put(catalog: Catalog, path: str, frontmatter: dict, chunks: int = 1, **kw) -> None:
    note = NoteSummary(path=path, content_hash=path, size=1, frontmatter=frontmatter, **kw)
    catalog.put(
        note,
        [Chunk(path=path, ordinal=i, start_line=1, end_line=1, text="x") for i in range(chunks)],
    )


def test_an_older_catalog_gets_the_index_on_open_and_expiring_uses_it(tmp_path: Path) -> None:
    db_path = tmp_path / "catalog.sqlite3"
    catalog = Catalog(db_path)
    _put(catalog, "a.md", {"expires": "2026-01-01"})
    _put(catalog, "b.md", {"title": "no expiry"})
    _put(catalog, "c.md", {"expires": "30d"})
    catalog.close()
    with sqlite3.connect(db_path) as db:  # as a catalog written before the index existed
        db.execute("DROP INDEX notes_expires")
    with sqlite3.connect(db_path) as db:
        names = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
    assert "notes_expires" not in names

    catalog = Catalog(db_path)
    try:
        assert set(catalog.expiring()) == {"a.md", "c.md"}
        assert set(catalog.expiring(["b.md", "c.md"])) == {"c.md"}
        _put(catalog, "b.md", {"expires": "2027-01-01"})
        assert set(catalog.expiring()) == {"a.md", "b.md", "c.md"}
    finally:
        catalog.close()
    with sqlite3.connect(db_path) as db:
        plan = " ".join(str(row) for row in db.execute("EXPLAIN QUERY PLAN " + EXPIRING_SQL))
    assert "notes_expires" in plan


def test_chunked_paths_are_the_notes_chunk_ids_by_path_groups(tmp_path: Path) -> None:
    catalog = Catalog(tmp_path / "catalog.sqlite3")
    try:
        _put(catalog, "a.md", {}, chunks=3, status="active")
        _put(catalog, "b.md", {}, chunks=0, status="active")  # no chunk: never allowed
        _put(catalog, "c/d.md", {}, chunks=2, status="archived")
        for kwargs in (
            {},
            {"statuses": ["active"]},
            {"statuses": ["archived", "superseded"]},
            {"path_patterns": ["c/"]},
            {"paths": {"a.md", "b.md"}},
        ):
            assert catalog.chunked_paths(**kwargs) == set(catalog.chunk_ids_by_path(**kwargs))
        assert catalog.chunked_paths() == {"a.md", "c/d.md"}
        assert catalog.note_count() == 3
    finally:
        catalog.close()
