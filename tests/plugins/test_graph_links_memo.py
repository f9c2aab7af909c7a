"""The SQLite graph's ``linked_paths``: batched reads and the per-path memo that link expansion
reads, which every write replaces. Answers are checked against ``Graph.linked_paths``'s default
(``outbound`` and ``inbound`` per path, straight from SQLite)."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from reme_core.components import ComponentContext, Graph
from reme_core.testing.graph import link
from reme_plugins import graph_sqlite
from reme_plugins.graph_sqlite import SqliteGraph


@pytest.fixture
def graph(tmp_path: Path):
    g = SqliteGraph(
        SqliteGraph.Settings(), ComponentContext(workspace=tmp_path, state_dir=tmp_path / ".reme")
    )
    yield g
    g.close()


def _random_links(rng: random.Random, source: str, notes: list[str]):
    links = []
    for i in range(rng.randrange(0, 6)):
        target = rng.choice(notes)
        state = rng.choice(["resolved", "resolved", "resolved", "missing"])
        links.append(
            link(
                source,
                target.removesuffix(".md"),
                target if state == "resolved" else None,
                line=rng.randrange(1, 4),  # several links on a line: ord keeps their order
                state=state,
            )
        )
        if i == 0 and rng.random() < 0.1:
            links.append(link(source, source.removesuffix(".md")))  # a self-link
    return links


def _reads(monkeypatch: pytest.MonkeyPatch, graph: SqliteGraph) -> list[list[str]]:
    """The path lists ``linked_paths`` read from SQLite, from now on."""
    calls: list[list[str]] = []
    real = graph._read_linked

    def counted(paths: list[str]):
        calls.append(list(paths))
        return real(paths)

    monkeypatch.setattr(graph, "_read_linked", counted)
    return calls


def test_linked_paths_match_outbound_and_inbound_through_writes(graph: SqliteGraph) -> None:
    rng = random.Random(7)
    notes = [f"n{i}.md" for i in range(40)]
    for source in notes:
        graph.set_links(source, _random_links(rng, source, notes))
    for step in range(60):
        paths = rng.sample([*notes, "unknown.md"], rng.randrange(1, 8))
        paths += rng.sample(paths, 1)  # a repeat is answered once
        for _ in range(2):  # the second answer comes from the memo
            assert graph.linked_paths(paths) == Graph.linked_paths(graph, paths)
        if step % 3 == 0:
            source = rng.choice(notes)
            graph.set_links(source, _random_links(rng, source, notes))
        elif step % 3 == 1:
            graph.remove(rng.choice(notes))  # inbound links to it become missing
    graph.clear()
    assert graph.linked_paths(notes[:5]) == {path: ([], []) for path in notes[:5]}


def test_memo_answers_repeats_and_every_write_forgets_it(
    graph: SqliteGraph, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph.set_links("a.md", [link("a.md", "b"), link("a.md", "c")])
    graph.set_links("b.md", [link("b.md", "a")])
    reads = _reads(monkeypatch, graph)
    assert graph.linked_paths(["a.md", "b.md"]) == {
        "a.md": (["b.md", "c.md"], ["b.md"]),
        "b.md": (["a.md"], ["a.md"]),
    }
    assert graph.linked_paths(["b.md", "c.md"]) == {
        "b.md": (["a.md"], ["a.md"]),
        "c.md": ([], ["a.md"]),
    }
    assert reads == [["a.md", "b.md"], ["c.md"]]  # only what the memo lacked

    graph.set_links("c.md", [link("c.md", "b")])
    assert graph.linked_paths(["b.md"]) == {"b.md": (["a.md"], ["a.md", "c.md"])}
    graph.remove("a.md")
    assert graph.linked_paths(["b.md"]) == {"b.md": ([], ["c.md"])}  # b's link to a is missing
    graph.clear()
    assert graph.linked_paths(["b.md"]) == {"b.md": ([], [])}
    assert reads[2:] == [["b.md"]] * 3


def test_refused_and_rolled_back_writes_leave_the_answer_as_it_was(graph: SqliteGraph) -> None:
    graph.set_links("a.md", [link("a.md", "b")])
    assert graph.linked_paths(["a.md"]) == {"a.md": (["b.md"], [])}
    with pytest.raises(ValueError):
        graph.set_links("a.md", [link("other.md", "c")])  # refused before any write
    bad = link("a.md", "c").model_copy(update={"line": object()})  # not bindable by sqlite
    with pytest.raises(sqlite3.Error):
        graph.set_links("a.md", [link("a.md", "d"), bad])  # rolled back
    assert graph.linked_paths(["a.md"]) == {"a.md": (["b.md"], [])}
    graph.set_links("a.md", [link("a.md", "e")])
    assert graph.linked_paths(["a.md"]) == {"a.md": (["e.md"], [])}


def test_answers_are_copies_the_caller_may_change(graph: SqliteGraph) -> None:
    graph.set_links("a.md", [link("a.md", "b")])
    graph.linked_paths(["a.md"])["a.md"][0].append("x.md")
    assert graph.linked_paths(["a.md"]) == {"a.md": (["b.md"], [])}


def test_memo_stays_bounded(graph: SqliteGraph, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(graph_sqlite, "_MEMO_MAX", 4)
    monkeypatch.setattr(graph_sqlite, "_IN_BATCH", 2)  # several IN lists in one read
    notes = [f"n{i}.md" for i in range(10)]
    for i, source in enumerate(notes):
        graph.set_links(source, [link(source, notes[(i + 1) % 10].removesuffix(".md"))])
    for start in range(0, 10, 3):
        paths = notes[start : start + 3]
        assert graph.linked_paths(paths) == Graph.linked_paths(graph, paths)
        assert len(graph._memo) <= 4
    assert graph.linked_paths(notes) == Graph.linked_paths(graph, notes)  # more than the memo
    assert len(graph._memo) <= 4
