"""Keyword searches and graph reads run concurrently, and never see a write half applied.

Threads meet at barriers rather than racing against sleeps: code that serialised these reads would
leave one thread waiting at the barrier for the other, and the barrier's deadline would fail it.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from reme_core.components import ComponentContext
from reme_core.testing.graph import link
from reme_core.testing.keyword_index import make_chunks
from reme_plugins.graph_sqlite import SqliteGraph
from reme_plugins.keyword_bm25s import Bm25sKeywordIndex
from reme_plugins.keyword_bm25s import index as keyword_bm25s  # calls _search_segment

DEADLINE_S = 10.0


def _context(tmp_path: Path) -> ComponentContext:
    return ComponentContext(workspace=tmp_path, state_dir=tmp_path / ".reme")


@pytest.fixture
def keyword(tmp_path: Path) -> Iterator[Bm25sKeywordIndex]:
    ix = Bm25sKeywordIndex(Bm25sKeywordIndex.Settings(), _context(tmp_path))
    ix.upsert("main.md", make_chunks("main.md", "the okapi lives in the forest", "zebra plains"))
    ix.optimize()  # main holds these; later writes go to the delta
    yield ix
    ix.close()


@pytest.fixture
def graph(tmp_path: Path) -> Iterator[SqliteGraph]:
    g = SqliteGraph(SqliteGraph.Settings(), _context(tmp_path))
    yield g
    g.close()


def _run_all(targets: list[Callable[[], Any]]) -> list[Any]:
    """Run each target on its own thread; return their results, or raise the first error."""
    results: list[Any] = [None] * len(targets)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            results[i] = targets[i]()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(len(targets))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(DEADLINE_S)
        assert not thread.is_alive(), "a thread did not finish"
    if errors:
        raise errors[0]
    return results


def _paths(hits: list[tuple[str, float]]) -> set[str]:
    return {cid.split("#")[0] for cid, _ in hits}


# -- keyword index ---------------------------------------------------------------------------


def test_two_keyword_searches_score_at_the_same_time(
    keyword: Bm25sKeywordIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    keyword.search("okapi", 5)  # the view is published; both searches below only read it
    meet = threading.Barrier(2, timeout=DEADLINE_S)
    score = keyword_bm25s._search_segment

    def meeting_score(*args: Any, **kwargs: Any) -> Any:
        meet.wait()  # both searches are inside the index's search here at once
        return score(*args, **kwargs)

    monkeypatch.setattr(keyword_bm25s, "_search_segment", meeting_score)
    results = _run_all([lambda: keyword.search("okapi", 5), lambda: keyword.search("okapi", 5)])
    assert [_paths(hits) for hits in results] == [{"main.md"}, {"main.md"}]


def test_refresh_rebuilds_the_delta_so_the_next_search_does_not(
    keyword: Bm25sKeywordIndex,
) -> None:
    keyword.upsert("new.md", make_chunks("new.md", "an okapi calf was born"))
    builds = keyword.delta_builds
    keyword.refresh()
    assert keyword.delta_builds == builds + 1
    assert _paths(keyword.search("okapi", 5)) == {"main.md", "new.md"}
    assert keyword.delta_builds == builds + 1
    keyword.refresh()  # nothing written since: nothing to rebuild
    assert keyword.delta_builds == builds + 1


def test_without_refresh_the_first_search_rebuilds_the_delta(keyword: Bm25sKeywordIndex) -> None:
    keyword.upsert("new.md", make_chunks("new.md", "an okapi calf was born"))
    builds = keyword.delta_builds
    assert _paths(keyword.search("okapi", 5)) == {"main.md", "new.md"}
    assert _paths(keyword.search("calf", 5)) == {"new.md"}
    assert keyword.delta_builds == builds + 1


def test_a_search_keeps_the_view_it_started_with_while_a_write_lands(
    keyword: Bm25sKeywordIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    keyword.search("okapi", 5)
    inside = threading.Event()
    written = threading.Event()
    score = keyword_bm25s._search_segment

    def paused_score(*args: Any, **kwargs: Any) -> Any:
        if threading.current_thread().name == "paused":
            inside.set()
            assert written.wait(DEADLINE_S)
        return score(*args, **kwargs)

    def write() -> None:
        assert inside.wait(DEADLINE_S)
        keyword.delete("main.md")  # tombstones main's chunks: a copy of the mask, not the view's
        keyword.refresh()
        written.set()

    monkeypatch.setattr(keyword_bm25s, "_search_segment", paused_score)
    results: list[Any] = []
    searcher = threading.Thread(
        target=lambda: results.append(keyword.search("okapi", 5)), name="paused", daemon=True
    )
    searcher.start()
    _run_all([write])
    searcher.join(DEADLINE_S)
    assert [_paths(hits) for hits in results] == [{"main.md"}]
    assert keyword.search("okapi", 5) == []


def test_a_search_that_rebuilds_the_delta_does_not_wait_for_a_flush_writing(
    keyword: Bm25sKeywordIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    keyword.upsert("new.md", make_chunks("new.md", "a quokka on the island"))
    writing = threading.Event()
    release = threading.Event()
    transaction = keyword._db.transaction

    @contextmanager
    def held_transaction() -> Iterator[sqlite3.Connection]:
        writing.set()
        assert release.wait(DEADLINE_S)
        with transaction() as conn:
            yield conn

    monkeypatch.setattr(keyword._db, "transaction", held_transaction)
    flusher = threading.Thread(target=keyword.flush, daemon=True)
    flusher.start()
    assert writing.wait(DEADLINE_S)
    try:
        [hits] = _run_all([lambda: keyword.search("quokka", 5)])  # no view: rebuilds the delta
    finally:
        release.set()
    flusher.join(DEADLINE_S)
    assert not flusher.is_alive()
    assert _paths(hits) == {"new.md"}
    assert keyword.stats()["unflushed_paths"] == 0


def test_a_failed_flush_keeps_its_rows_pending_behind_newer_ones(
    keyword: Bm25sKeywordIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    keyword.upsert("new.md", make_chunks("new.md", "a quokka on the island"))
    keyword.upsert("other.md", make_chunks("other.md", "a numbat in the scrub"))

    @contextmanager
    def failing_transaction() -> Iterator[sqlite3.Connection]:
        # A write of the same path lands while the flush writes outside the index's lock.
        keyword.upsert("new.md", make_chunks("new.md", "a wombat on the island"))
        raise sqlite3.OperationalError("disk I/O error")
        yield  # pragma: no cover

    monkeypatch.setattr(keyword._db, "transaction", failing_transaction)
    with pytest.raises(sqlite3.OperationalError):
        keyword.flush()
    assert keyword.stats()["unflushed_paths"] == 2
    monkeypatch.undo()
    keyword.close()  # flushes

    reopened = Bm25sKeywordIndex(Bm25sKeywordIndex.Settings(), _context(tmp_path))
    try:
        assert _paths(reopened.search("numbat", 5)) == {"other.md"}
        assert _paths(reopened.search("wombat", 5)) == {"new.md"}
        assert reopened.search("quokka", 5) == []
    finally:
        reopened.close()


# -- graph -------------------------------------------------------------------------------------


def test_graph_reads_run_at_the_same_time(graph: SqliteGraph) -> None:
    graph.set_links("a.md", [link("a.md", "b")])
    meet = threading.Barrier(2, timeout=DEADLINE_S)

    def read_while_holding() -> list[str]:
        with graph._read() as conn:
            meet.wait()  # the other thread's read runs while this one holds its connection
            rows = conn.execute("SELECT source FROM links WHERE target = 'b.md'").fetchall()
            meet.wait()
        return [r[0] for r in rows]

    def read_inbound() -> list[str]:
        meet.wait()
        found = [lk.source for lk in graph.inbound("b.md")]
        meet.wait()
        return found

    assert _run_all([read_while_holding, read_inbound]) == [["a.md"], ["a.md"]]


def test_a_graph_read_sees_one_committed_state_while_a_writer_updates(graph: SqliteGraph) -> None:
    graph.set_links("a.md", [link("a.md", "b")])
    holding = threading.Event()
    written = threading.Event()

    def read_across_a_write() -> tuple[list[str], list[str]]:
        with graph._read() as conn:
            query = "SELECT source FROM links WHERE target = 'b.md' ORDER BY source"
            before = [r[0] for r in conn.execute(query)]
            holding.set()
            assert written.wait(DEADLINE_S)
            after = [r[0] for r in conn.execute(query)]
        return before, after

    def write() -> None:
        assert holding.wait(DEADLINE_S)
        graph.set_links("c.md", [link("c.md", "b")])  # WAL: not blocked by the open read
        written.set()

    assert _run_all([read_across_a_write, write])[0] == (["a.md"], ["a.md"])
    assert [lk.source for lk in graph.inbound("b.md")] == ["a.md", "c.md"]


def test_concurrent_graph_readers_never_see_half_a_set_links(graph: SqliteGraph) -> None:
    three = [link("src.md", "hub", line=i) for i in (1, 2, 3)]
    stop = threading.Event()
    rounds = 200

    def writer() -> None:
        try:
            for i in range(rounds):
                graph.set_links("src.md", three if i % 2 == 0 else [])
        finally:
            stop.set()

    def reader() -> set[int]:
        seen: set[int] = set()
        while not stop.is_set():
            seen.add(len(graph.inbound("hub.md")))
            out, inbound = graph.neighbors("hub.md")
            assert out == [] and inbound in ([], ["src.md"])
        return seen

    results = _run_all([writer, reader, reader])
    for seen in results[1:]:
        assert seen <= {0, 3}
    assert len(graph.inbound("hub.md")) == 0  # the last round (odd) removed them
