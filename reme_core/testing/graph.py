"""Conformance suite for ``Graph`` implementations.

Use it from a plugin's tests by subclassing and overriding one fixture::

    class TestMyGraph(GraphConformance):
        @pytest.fixture
        def make_graph(self, tmp_path):
            context = ComponentContext(workspace=tmp_path, state_dir=tmp_path / ".reme")
            return lambda: MyGraph(MyGraph.Settings(), context)

``make_graph`` returns a factory; every call must build a fresh instance over the same state, so the
suite can close one and reopen another. Set ``persistent = False`` for an in-memory graph.
``neighbors`` and ``traverse`` are optional: their tests skip when the class lacks them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import ClassVar

import pytest

from reme_core.components import Graph
from reme_core.schema import Link

GraphFactory = Callable[[], Graph]


def link(
    source: str,
    raw: str,
    target: str | None = None,
    *,
    line: int = 1,
    state: str = "resolved",
    anchor: str | None = None,
    alias: str | None = None,
    embed: bool = False,
) -> Link:
    """A link from ``source``, resolved to ``target`` (default ``raw + '.md'``) unless ``state``."""
    if state == "resolved" and target is None:
        target = raw if raw.endswith(".md") else raw + ".md"
    return Link(
        source=source,
        raw=raw,
        target=target if state == "resolved" else None,
        anchor=anchor,
        alias=alias,
        embed=embed,
        line=line,
        state=state,  # type: ignore[arg-type]
    )


class GraphConformance:
    """The ``Graph`` contract. Not collected by itself (no ``Test`` prefix): subclass it."""

    persistent: ClassVar[bool] = True

    @pytest.fixture
    def make_graph(self, tmp_path) -> GraphFactory:
        """Override: return a factory building the graph under test over ``tmp_path``."""
        raise NotImplementedError("subclasses of GraphConformance must override make_graph")

    @pytest.fixture
    def graph(self, make_graph: GraphFactory) -> Iterator[Graph]:
        g = make_graph()
        yield g
        g.close()

    # -- empty and round trip ------------------------------------------------------------------

    def test_empty_graph_has_nothing(self, graph: Graph) -> None:
        assert graph.outbound("a.md") == []
        assert graph.inbound("a.md") == []
        assert graph.unresolved() == []

    def test_every_link_field_round_trips(self, graph: Graph) -> None:
        links = [
            link("a.md", "b", "b.md", line=3, anchor="Intro", alias="Bee", embed=True),
            link("a.md", "ghost", line=4, state="missing", alias="Boo"),
            link("a.md", "dup", line=5, state="ambiguous", anchor="x"),
        ]
        graph.set_links("a.md", links)
        assert graph.outbound("a.md") == links

    def test_outbound_is_in_line_order_and_keeps_order_within_a_line(self, graph: Graph) -> None:
        l7 = link("a.md", "late", line=7)
        l2a = link("a.md", "first", line=2)
        l2b = link("a.md", "second", line=2)
        l5 = link("a.md", "nowhere", line=5, state="missing")
        graph.set_links("a.md", [l7, l2a, l2b, l5])
        assert [x.raw for x in graph.outbound("a.md")] == ["first", "second", "nowhere", "late"]

    def test_same_target_twice_is_kept_twice_in_outbound(self, graph: Graph) -> None:
        graph.set_links("a.md", [link("a.md", "b", line=1), link("a.md", "b", line=9)])
        assert [x.line for x in graph.outbound("a.md")] == [1, 9]

    # -- replacing and removing ----------------------------------------------------------------

    def test_set_links_replaces_previous_links(self, graph: Graph) -> None:
        graph.set_links("a.md", [link("a.md", "b"), link("a.md", "c", line=2)])
        graph.set_links("a.md", [link("a.md", "d", line=4)])
        assert [x.raw for x in graph.outbound("a.md")] == ["d"]
        assert graph.inbound("b.md") == []
        assert [x.source for x in graph.inbound("d.md")] == ["a.md"]

    def test_set_links_empty_forgets_outbound(self, graph: Graph) -> None:
        graph.set_links("a.md", [link("a.md", "b"), link("a.md", "x", state="missing")])
        graph.set_links("a.md", [])
        assert graph.outbound("a.md") == []
        assert graph.inbound("b.md") == []
        assert graph.unresolved() == []

    def test_set_links_leaves_other_sources_alone(self, graph: Graph) -> None:
        graph.set_links("a.md", [link("a.md", "c")])
        graph.set_links("b.md", [link("b.md", "c")])
        graph.set_links("a.md", [])
        assert [x.source for x in graph.inbound("c.md")] == ["b.md"]

    def test_remove_forgets_outbound_links_only_of_that_source(self, graph: Graph) -> None:
        graph.set_links("a.md", [link("a.md", "c"), link("a.md", "gone", state="missing")])
        graph.set_links("b.md", [link("b.md", "c"), link("b.md", "lost", state="missing")])
        graph.remove("a.md")
        assert graph.outbound("a.md") == []
        assert [x.source for x in graph.inbound("c.md")] == ["b.md"]
        assert [x.raw for x in graph.unresolved()] == ["lost"]
        assert [x.raw for x in graph.outbound("b.md")] == ["c", "lost"]

    def test_remove_makes_links_into_the_removed_note_pending(self, graph: Graph) -> None:
        graph.set_links("a.md", [link("a.md", "b", line=2, alias="Bee")])
        graph.set_links("b.md", [link("b.md", "c")])
        graph.remove("b.md")
        assert graph.inbound("b.md") == []
        pending = graph.unresolved()
        assert [(x.source, x.raw, x.line, x.alias) for x in pending] == [("a.md", "b", 2, "Bee")]
        assert pending[0].state != "resolved"

    def test_remove_unknown_source_is_a_no_op(self, graph: Graph) -> None:
        graph.set_links("a.md", [link("a.md", "b")])
        graph.remove("nope.md")
        assert [x.raw for x in graph.outbound("a.md")] == ["b"]

    def test_clear_drops_everything(self, graph: Graph) -> None:
        graph.set_links("a.md", [link("a.md", "b"), link("a.md", "x", state="missing")])
        graph.set_links("b.md", [link("b.md", "a")])
        graph.clear()
        assert graph.outbound("a.md") == []
        assert graph.inbound("a.md") == []
        assert graph.unresolved() == []
        graph.set_links("a.md", [link("a.md", "b")])  # still usable after clear
        assert [x.source for x in graph.inbound("b.md")] == ["a.md"]

    # -- inbound and unresolved ----------------------------------------------------------------

    def test_inbound_lists_resolved_links_from_other_notes(self, graph: Graph) -> None:
        graph.set_links("z.md", [link("z.md", "t", line=4)])
        graph.set_links("a.md", [link("a.md", "t", line=1), link("a.md", "t", line=3)])
        graph.set_links("t.md", [link("t.md", "t", line=1)])  # a self-link is not inbound
        inbound = graph.inbound("t.md")
        assert {(x.source, x.line) for x in inbound} == {("z.md", 4), ("a.md", 1), ("a.md", 3)}
        assert all(x.target == "t.md" and x.state == "resolved" for x in inbound)

    def test_inbound_ignores_unresolved_links(self, graph: Graph) -> None:
        graph.set_links(
            "a.md",
            [link("a.md", "t", state="missing"), link("a.md", "t", line=2, state="ambiguous")],
        )
        assert graph.inbound("t.md") == []

    def test_inbound_matches_the_resolved_target_not_the_raw_text(self, graph: Graph) -> None:
        graph.set_links("a.md", [link("a.md", "Notes/Topic", "digest/wiki/topic.md")])
        assert [x.raw for x in graph.inbound("digest/wiki/topic.md")] == ["Notes/Topic"]
        assert graph.inbound("Notes/Topic.md") == []

    def test_unresolved_lists_missing_and_ambiguous_from_every_source(self, graph: Graph) -> None:
        graph.set_links("a.md", [link("a.md", "x", state="missing"), link("a.md", "ok", line=2)])
        graph.set_links("b.md", [link("b.md", "y", line=5, state="ambiguous")])
        pending = {(x.source, x.raw, x.state) for x in graph.unresolved()}
        assert pending == {("a.md", "x", "missing"), ("b.md", "y", "ambiguous")}

    def test_resolving_a_pending_link_moves_it_to_inbound(self, graph: Graph) -> None:
        graph.set_links("a.md", [link("a.md", "new", state="missing")])
        graph.set_links("a.md", [link("a.md", "new", "new.md")])  # the indexer re-resolved it
        assert graph.unresolved() == []
        assert [x.source for x in graph.inbound("new.md")] == ["a.md"]

    def test_paths_with_spaces_and_unicode(self, graph: Graph) -> None:
        src, dst = "daily/2024-05-01/café notes.md", "digest/wiki/Zürich trip.md"
        graph.set_links(src, [link(src, "Zürich trip", dst)])
        assert [x.source for x in graph.inbound(dst)] == [src]
        assert graph.outbound(src)[0].target == dst

    # -- lifecycle -------------------------------------------------------------------------------

    def test_state_survives_close_and_reopen(self, make_graph: GraphFactory) -> None:
        if not self.persistent:
            pytest.skip("in-memory graph")
        first = make_graph()
        links = [link("a.md", "b", line=2, alias="B"), link("a.md", "x", line=3, state="missing")]
        first.set_links("a.md", links)
        first.set_links("c.md", [link("c.md", "b")])
        first.remove("c.md")
        first.close()
        second = make_graph()
        try:
            assert second.outbound("a.md") == links
            assert [x.source for x in second.inbound("b.md")] == ["a.md"]
            assert [x.raw for x in second.unresolved()] == ["x"]
            assert second.outbound("c.md") == []
        finally:
            second.close()

    def test_concurrent_writers_from_threads(self, graph: Graph) -> None:
        errors: list[BaseException] = []

        def write(worker: int) -> None:
            try:
                for i in range(40):
                    src = f"w{worker}/n{i}.md"
                    graph.set_links(src, [link(src, "hub"), link(src, f"w{worker}/n{i + 1}")])
                    graph.outbound(src)
            except BaseException as exc:  # surfaced below; a thread's exception is otherwise lost
                errors.append(exc)

        threads = [threading.Thread(target=write, args=(w,)) for w in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert len(graph.inbound("hub.md")) == 160

    # -- optional: neighbors and traverse ------------------------------------------------------

    def _need(self, graph: Graph, method: str) -> None:
        if not hasattr(graph, method):
            pytest.skip(f"{type(graph).__name__} has no {method}()")

    def test_neighbors_dedupes_caps_and_skips_unresolved(self, graph: Graph) -> None:
        self._need(graph, "neighbors")
        graph.set_links(
            "hub.md",
            [
                link("hub.md", "c", line=1),
                link("hub.md", "a", line=2),
                link("hub.md", "c", line=3),
                link("hub.md", "hub", line=4),  # self-link: not a neighbour
                link("hub.md", "x", line=5, state="missing"),
                link("hub.md", "b", line=6),
            ],
        )
        for src in ["q.md", "p.md", "r.md"]:
            graph.set_links(src, [link(src, "hub"), link(src, "hub", line=2)])
        graph.set_links("s.md", [link("s.md", "hub", state="ambiguous")])
        out, inb = graph.neighbors("hub.md", 10)  # type: ignore[attr-defined]
        assert out == ["c.md", "a.md", "b.md"]
        assert inb == ["p.md", "q.md", "r.md"]
        assert graph.neighbors("hub.md", 2) == (["c.md", "a.md"], ["p.md", "q.md"])  # type: ignore[attr-defined]
        assert graph.neighbors("hub.md", 0) == ([], [])  # type: ignore[attr-defined]
        assert graph.neighbors("alone.md", 5) == ([], [])  # type: ignore[attr-defined]

    def test_traverse_walks_both_directions_within_depth(self, graph: Graph) -> None:
        self._need(graph, "traverse")
        # a -> b -> c -> d, and e -> b; x is dangling from a.
        graph.set_links("a.md", [link("a.md", "b"), link("a.md", "x", state="missing")])
        graph.set_links("b.md", [link("b.md", "c")])
        graph.set_links("c.md", [link("c.md", "d")])
        graph.set_links("e.md", [link("e.md", "b")])
        assert graph.traverse("a.md", 0, 10) == {"a.md": 0}  # type: ignore[attr-defined]
        assert graph.traverse("a.md", 2, 10) == {  # type: ignore[attr-defined]
            "a.md": 0,
            "b.md": 1,
            "c.md": 2,
            "e.md": 2,
        }
        assert graph.traverse("c.md", 1, 10) == {"c.md": 0, "b.md": 1, "d.md": 1}  # type: ignore[attr-defined]
        assert set(graph.traverse("d.md", 9, 100)) == {"a.md", "b.md", "c.md", "d.md", "e.md"}  # type: ignore[attr-defined]

    def test_traverse_respects_limit_and_cycles(self, graph: Graph) -> None:
        self._need(graph, "traverse")
        for i in range(6):  # a ring: n0 -> n1 -> ... -> n5 -> n0
            graph.set_links(f"n{i}.md", [link(f"n{i}.md", f"n{(i + 1) % 6}")])
        ring = graph.traverse("n0.md", 10, 100)  # type: ignore[attr-defined]
        assert ring == {"n0.md": 0, "n1.md": 1, "n5.md": 1, "n2.md": 2, "n4.md": 2, "n3.md": 3}
        capped = graph.traverse("n0.md", 10, 3)  # type: ignore[attr-defined]
        assert capped == {"n0.md": 0, "n1.md": 1, "n5.md": 1}
        assert graph.traverse("n0.md", 10, 0) == {}  # type: ignore[attr-defined]
