"""The SQLite graph: the Graph conformance suite plus what is specific to SQLite."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from pydantic import ValidationError

from reme_core.components import ComponentContext
from reme_core.errors import PluginError, RemeError
from reme_core.plugins import Plugins
from reme_core.testing.graph import GraphConformance, link
from reme_plugins import graph_sqlite
from reme_plugins.graph_sqlite import SqliteGraph


def _context(tmp_path: Path) -> ComponentContext:
    return ComponentContext(workspace=tmp_path, state_dir=tmp_path / ".reme")


class TestSqliteGraph(GraphConformance):
    @pytest.fixture
    def make_graph(self, tmp_path):
        return lambda: SqliteGraph(SqliteGraph.Settings(), _context(tmp_path))


def test_registers_as_sqlite_graph() -> None:
    plugins = Plugins()
    plugins.register(graph_sqlite, name="graph_sqlite")
    assert plugins.get("graph", "sqlite") is SqliteGraph


def test_database_lives_in_state_dir_under_the_configured_name(tmp_path: Path) -> None:
    graph = SqliteGraph(SqliteGraph.Settings(filename="links.db"), _context(tmp_path))
    graph.set_links("a.md", [link("a.md", "b")])
    graph.close()
    db = tmp_path / ".reme" / "links.db"
    assert db.is_file()
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT source, target FROM links").fetchall() == [("a.md", "b.md")]


def test_construction_is_cheap_and_opens_nothing(tmp_path: Path) -> None:
    SqliteGraph(SqliteGraph.Settings(), _context(tmp_path))
    assert not (tmp_path / ".reme").exists()


def test_use_after_close_reopens(tmp_path: Path) -> None:
    graph = SqliteGraph(SqliteGraph.Settings(), _context(tmp_path))
    graph.set_links("a.md", [link("a.md", "b")])
    graph.close()
    graph.close()  # twice is harmless
    assert [x.raw for x in graph.outbound("a.md")] == ["b"]
    graph.close()


def test_settings_reject_unknown_keys_and_paths() -> None:
    with pytest.raises(ValidationError):
        SqliteGraph.Settings(file="x")  # type: ignore[call-arg]
    for bad in ["../graph.db", "sub/graph.db", "", ".."]:
        with pytest.raises(ValidationError, match="plain file name"):
            SqliteGraph.Settings(filename=bad)


def test_needs_a_context() -> None:
    with pytest.raises(PluginError, match="state_dir"):
        SqliteGraph()


def test_corrupt_database_says_how_to_recover(tmp_path: Path) -> None:
    (tmp_path / ".reme").mkdir()
    (tmp_path / ".reme" / "graph.sqlite3").write_bytes(b"this is not a database" * 100)
    graph = SqliteGraph(SqliteGraph.Settings(), _context(tmp_path))
    with pytest.raises(RemeError, match="reme reindex"):
        graph.outbound("a.md")


def test_newer_schema_version_is_refused(tmp_path: Path) -> None:
    (tmp_path / ".reme").mkdir()
    with sqlite3.connect(tmp_path / ".reme" / "graph.sqlite3") as conn:
        conn.execute("PRAGMA user_version=99")
    graph = SqliteGraph(SqliteGraph.Settings(), _context(tmp_path))
    with pytest.raises(RemeError, match="schema version 99"):
        graph.unresolved()


def test_link_with_another_source_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    graph = SqliteGraph(SqliteGraph.Settings(), _context(tmp_path))
    graph.set_links("a.md", [link("a.md", "b")])
    with pytest.raises(ValueError, match=r"expected 'a\.md'"):
        graph.set_links("a.md", [link("a.md", "c"), link("z.md", "d")])
    assert [x.raw for x in graph.outbound("a.md")] == ["b"]
    graph.close()


def test_failed_write_rolls_back(tmp_path: Path) -> None:
    graph = SqliteGraph(SqliteGraph.Settings(), _context(tmp_path))
    graph.set_links("a.md", [link("a.md", "b")])
    bad = link("a.md", "c").model_copy(update={"line": object()})  # not bindable by sqlite
    with pytest.raises(sqlite3.Error):
        graph.set_links("a.md", [link("a.md", "d"), bad])
    assert [x.raw for x in graph.outbound("a.md")] == ["b"]
    graph.set_links("a.md", [link("a.md", "e")])  # the connection is still usable
    assert [x.raw for x in graph.outbound("a.md")] == ["e"]
    graph.close()


def test_bulk_indexing_many_notes(tmp_path: Path) -> None:
    graph = SqliteGraph(SqliteGraph.Settings(), _context(tmp_path))
    for i in range(2000):
        src = f"n{i}.md"
        graph.set_links(src, [link(src, f"n{(i + 1) % 2000}"), link(src, "hub", line=2)])
    assert len(graph.inbound("hub.md")) == 2000
    assert graph.stats() == {"links": 4000, "unresolved": 0, "sources": 2000}
    assert graph.neighbors("n5.md", 10) == (["n6.md", "hub.md"], ["n4.md"])
    graph.close()
