"""Per-arm index texts (``Chunk.keyword_text`` / ``vector_text``): each arm indexes its own,
a hit shows the note's own text, and editing a context value re-indexes."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FAKE_VECTORS, KEYWORD_ONLY_ENV, defaults_plus

from reme_core import hookimpl
from reme_core.plugins import Plugins
from reme_core.runtime import Reme
from reme_core.schema import Chunk
from reme_core.workspace.layout import init_workspace
from reme_plugins.embedding_hash import HashEmbedding

EMBEDDED: list[str] = []
ARMS = [
    "components.chunkers[.md].settings.keyword_context_keys=[date]",
    "components.chunkers[.md].settings.vector_context_keys=[replying_to]",
]


def turn(replying_to: str) -> str:
    return (
        f'---\ndate: 2023-05-08\nreplying_to: "{replying_to}"\n---\n'
        "Caroline: yes, we went camping!\n"
    )


class RecordingHash(HashEmbedding):
    name = "recording_hash"

    def embed_passages(self, texts):  # type: ignore[no-untyped-def]
        EMBEDDED.extend(texts)
        return super().embed_passages(texts)


class Extras:
    @hookimpl
    def register_embeddings(self, register):  # type: ignore[no-untyped-def]
        register(RecordingHash)


@pytest.fixture
def plugins() -> Plugins:
    manager = defaults_plus(test_extras=Extras())
    EMBEDDED.clear()
    return manager


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    init_workspace(root)
    note = root / "daily" / "t1.md"
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text(turn("Melanie: did you do anything fun at the weekend?"), "utf-8")
    return root


def test_chunk_arm_bodies_default_to_the_text() -> None:
    chunk = Chunk(path="a.md", ordinal=0, start_line=1, end_line=1, text="own")
    assert (chunk.keyword_body, chunk.vector_body) == ("own", "own")
    chunk = Chunk(path="a.md", ordinal=0, start_line=1, end_line=1, text="own", vector_text="v")
    assert (chunk.keyword_body, chunk.vector_body) == ("own", "v")


def test_keyword_arm_indexes_only_its_own_context(root: Path, plugins: Plugins) -> None:
    with Reme.open(root, plugins=plugins, env=KEYWORD_ONLY_ENV, overrides=ARMS) as reme:
        reme.index()
        (hit,) = reme.search("monday", expand=False).hits  # only in the keyword context
        assert hit.text == "Caroline: yes, we went camping!"  # the note's own text
        assert reme.search("weekend", expand=False).hits == []  # only in the vector context
        reme.reindex()  # a rebuild from the notes gives the same
        assert [h.text for h in reme.search("monday", expand=False).hits] == [hit.text]
        assert reme.search("weekend", expand=False).hits == []


def test_vector_arm_embeds_its_context_and_an_edit_reindexes(root: Path, plugins: Plugins):
    overrides = [*FAKE_VECTORS, "components.embedding.name=recording_hash", *ARMS]
    with Reme.open(root, plugins=plugins, env={}, overrides=overrides) as reme:
        reme.index()
        first = "Melanie: did you do anything fun at the weekend?\nCaroline: yes, we went camping!"
        assert first in EMBEDDED
        assert not any("Monday" in text for text in EMBEDDED)  # the keyword context stays out
        response = reme.search("fun weekend camping", expand=False)
        assert "vector" in response.arms
        assert [h.text for h in response.hits] == ["Caroline: yes, we went camping!"]
        EMBEDDED.clear()
        note = root / "daily" / "t1.md"
        note.write_text(turn("Melanie: how was the lake?"), "utf-8")
        reme.index()
        assert EMBEDDED == ["Melanie: how was the lake?\nCaroline: yes, we went camping!"]
        ((_, _, text),) = reme.catalog.chunk_rows()
        assert text == EMBEDDED[0]


def test_an_older_catalog_gets_the_arm_columns(tmp_path: Path) -> None:
    import sqlite3

    from reme_core.index.catalog_schema import CHUNKS_SCHEMA, create_tables

    db = sqlite3.connect(tmp_path / "catalog.sqlite3", isolation_level=None)
    old = CHUNKS_SCHEMA.replace("    keyword_text TEXT,\n    vector_text TEXT,\n", "")
    assert "keyword_text" not in old
    db.executescript(old)
    create_tables(db)
    columns = {row[1] for row in db.execute("PRAGMA table_info(chunks)")}
    assert {"keyword_text", "vector_text"} <= columns
    create_tables(db)  # a second open changes nothing
    db.close()
