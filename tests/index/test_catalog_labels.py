"""``Catalog.labels`` (a search's linked notes): answered from a memo of the catalog's current
generation, so every write is seen at once; checked against the notes table itself."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from reme_core.index import catalog_queries
from reme_core.index.catalog import Catalog
from reme_core.index.catalog_queries import NoteLabel
from reme_core.schema import Chunk, NoteSummary


def put(catalog: Catalog, path: str, name: str | None, description: str | None = None) -> None:
    summary = NoteSummary(
        path=path, content_hash=f"{path}{name}", size=1, name=name, description=description
    )
    catalog.put(summary, [Chunk(path=path, ordinal=0, start_line=1, end_line=1, text="x")])


def table(catalog: Catalog, paths: list[str]) -> dict[str, NoteLabel]:
    with sqlite3.connect(catalog.db_path) as db:
        rows = db.execute("SELECT path, name, description FROM notes").fetchall()
    labels = {path: NoteLabel(name, description) for path, name, description in rows}
    return {path: labels[path] for path in dict.fromkeys(paths) if path in labels}


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[Catalog]:
    opened = Catalog(tmp_path / "catalog.sqlite3")
    yield opened
    opened.close()


def test_labels_follow_every_write(catalog: Catalog) -> None:
    rng = random.Random(3)
    notes = [f"n{i}.md" for i in range(30)]
    for path in notes[:20]:
        put(catalog, path, f"name of {path}", rng.choice([None, "about it"]))
    for step in range(80):
        paths = rng.sample(notes, rng.randrange(1, 10))
        paths += paths[:1]  # repeats are answered once
        for _ in range(2):  # the second from the memo
            assert catalog.labels(paths) == table(catalog, paths)
        path = rng.choice(notes)
        if step % 4 == 3:
            catalog.remove(path)
        else:
            put(catalog, path, rng.choice([None, f"renamed {step}"]), rng.choice([None, "d"]))
    catalog.clear()
    assert catalog.labels(notes) == {}


def test_repeats_are_read_once_and_a_write_reads_again(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    put(catalog, "a.md", "A")
    put(catalog, "b.md", "B")
    read: list[list[str]] = []
    real = catalog_queries.rows_of_paths

    def counted(db, sql, paths, **kwargs):
        read.append(list(paths))
        return real(db, sql, paths, **kwargs)

    monkeypatch.setattr(catalog_queries, "rows_of_paths", counted)
    assert catalog.labels(["a.md", "gone.md"]) == {"a.md": NoteLabel("A", None)}
    assert catalog.labels(["gone.md", "a.md", "b.md"]) == {
        "a.md": NoteLabel("A", None),
        "b.md": NoteLabel("B", None),
    }
    assert read == [["a.md", "gone.md"], ["b.md"]]  # a path the catalog lacks is known too
    put(catalog, "gone.md", "back")
    assert catalog.labels(["gone.md"]) == {"gone.md": NoteLabel("back", None)}
    assert read[2:] == [["gone.md"]]


def test_memo_stays_bounded(catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catalog_queries, "_LABEL_MEMO_MAX", 3)
    for i in range(8):
        put(catalog, f"n{i}.md", str(i))
    for start in range(0, 8, 2):
        paths = [f"n{i}.md" for i in range(start, start + 2)]
        assert catalog.labels(paths) == table(catalog, paths)
        assert len(catalog._label_memo[1]) <= 3
