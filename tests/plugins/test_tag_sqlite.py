"""The SQLite tag index: the TagIndex conformance suite plus what is specific to SQLite."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from pydantic import ValidationError

from reme_core.components import ComponentContext
from reme_core.errors import PluginError, RemeError
from reme_core.plugins import Plugins
from reme_core.testing.tag_index import TagIndexConformance
from reme_plugins import tag_sqlite
from reme_plugins.tag_sqlite import SqliteTagIndex, normalise_tag


def _context(tmp_path: Path) -> ComponentContext:
    return ComponentContext(workspace=tmp_path, state_dir=tmp_path / ".reme")


class TestSqliteTagIndex(TagIndexConformance):
    @pytest.fixture
    def make_tag_index(self, tmp_path):
        return lambda: SqliteTagIndex(SqliteTagIndex.Settings(), _context(tmp_path))


@pytest.fixture
def index(tmp_path: Path):
    idx = SqliteTagIndex(SqliteTagIndex.Settings(), _context(tmp_path))
    yield idx
    idx.close()


def test_registers_as_sqlite_tag_index() -> None:
    plugins = Plugins()
    plugins.register(tag_sqlite, name="tag_sqlite")
    assert plugins.get("tag_index", "sqlite") is SqliteTagIndex


@pytest.mark.parametrize(
    ("raw", "stored"),
    [
        ("Project", "project"),
        ("#Project/ReMe", "project/reme"),
        ("  spaced  ", "spaced"),
        ("/outer/", "outer"),
        ("Straße", "strasse"),
        (2024, "2024"),
        ("#", ""),
    ],
)
def test_normalise_tag(raw: object, stored: str) -> None:
    assert normalise_tag(raw) == stored


def test_tags_are_stored_normalised(index: SqliteTagIndex) -> None:
    index.set_tags("a.md", ["#Project/ReMe", "project/reme", " ", "#", "Idea"])
    assert index.tags("a.md") == {"idea": 1, "project/reme": 1}
    assert index.paths(["#PROJECT"]) == {"a.md"}


def test_a_single_string_is_one_tag(index: SqliteTagIndex) -> None:
    index.set_tags("a.md", "project")  # type: ignore[arg-type] - frontmatter `tags: project`
    assert index.tags("a.md") == {"project": 1}
    assert index.paths("project") == {"a.md"}  # type: ignore[arg-type]


def test_blank_query_tag_matches_nothing(index: SqliteTagIndex) -> None:
    index.set_tags("a.md", ["x"])
    assert index.paths(["#"]) == set()
    assert index.paths(["x", " "], "all") == set()
    assert index.paths(["x", " "], "any") == {"a.md"}


def test_like_wildcards_in_tags_are_literal(index: SqliteTagIndex) -> None:
    index.set_tags("a.md", ["100%/done", "a_b"])
    index.set_tags("b.md", ["100x/done", "axb"])
    assert index.paths(["100%"]) == {"a.md"}
    assert index.paths(["a_b"]) == {"a.md"}


def test_unknown_mode_is_refused(index: SqliteTagIndex) -> None:
    with pytest.raises(ValueError, match="'any' or 'all'"):
        index.paths(["x"], "some")  # type: ignore[arg-type]


def test_stats(index: SqliteTagIndex) -> None:
    index.set_tags("a.md", ["x", "y"])
    index.set_tags("b.md", ["x"])
    assert index.stats() == {"tags": 2, "tagged_notes": 2}


def test_database_lives_in_state_dir_under_the_configured_name(tmp_path: Path) -> None:
    idx = SqliteTagIndex(SqliteTagIndex.Settings(filename="t.db"), _context(tmp_path))
    idx.set_tags("a.md", ["x"])
    idx.close()
    db = tmp_path / ".reme" / "t.db"
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT path, tag FROM tags").fetchall() == [("a.md", "x")]


def test_settings_reject_unknown_keys_and_paths() -> None:
    with pytest.raises(ValidationError):
        SqliteTagIndex.Settings(path="x")  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="plain file name"):
        SqliteTagIndex.Settings(filename="../tags.db")


def test_needs_a_context() -> None:
    with pytest.raises(PluginError, match="state_dir"):
        SqliteTagIndex()


def test_corrupt_database_says_how_to_recover(tmp_path: Path) -> None:
    (tmp_path / ".reme").mkdir()
    (tmp_path / ".reme" / "tags.sqlite3").write_bytes(b"garbage!" * 500)
    idx = SqliteTagIndex(SqliteTagIndex.Settings(), _context(tmp_path))
    with pytest.raises(RemeError, match="reme reindex"):
        idx.tags()
