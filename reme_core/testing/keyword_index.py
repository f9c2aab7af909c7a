"""Conformance suite for ``KeywordIndex`` implementations.

A plugin proves itself by subclassing and providing an ``index`` fixture: a factory that opens an
index over a given state folder (called again with the same folder to test reopening)::

    class TestMyIndex(KeywordIndexConformance):
        @pytest.fixture
        def index(self):
            def make(state_dir):
                context = ComponentContext(workspace=state_dir.parent, state_dir=state_dir)
                return MyIndex(MyIndex.Settings(), context)

            return make

Texts use plain English words that any reasonable tokenizer splits the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from reme_core.components import KeywordIndex
from reme_core.schema import Chunk

IndexFactory = Callable[[Path], KeywordIndex]
Opener = Callable[[], KeywordIndex]


def make_chunks(path: str, *texts: str) -> list[Chunk]:
    """One chunk per text, ordinals from 0, one line each."""
    return [
        Chunk(path=path, ordinal=i, start_line=i + 1, end_line=i + 1, text=text)
        for i, text in enumerate(texts)
    ]


def ids(hits: list[tuple[str, float]]) -> list[str]:
    """The chunk ids of search hits, in order."""
    return [chunk_id for chunk_id, _ in hits]


CORPUS: dict[str, tuple[str, ...]] = {
    "daily/2024-05-01/standup.md": (
        "Standup notes: the deploy pipeline failed on the staging cluster",
        "Action: rotate the database password before Friday",
    ),
    "digest/wiki/giraffe.md": ("Giraffes are the tallest mammals; giraffe necks hold seven bones",),
    "digest/wiki/falcon.md": ("Peregrine falcon dives are the fastest animal movement recorded",),
    "resource/recipes.md": (
        "Lemon tart recipe with butter, sugar and lemon zest",
        "Bake the tart shell blind for fifteen minutes",
    ),
}


class KeywordIndexConformance:
    """Behaviour every keyword index must show. Subclasses provide the ``index`` fixture."""

    @pytest.fixture
    def index(self) -> IndexFactory:
        """Override: return a factory ``state_dir -> KeywordIndex``."""
        pytest.fail("a KeywordIndexConformance subclass must override the `index` fixture")

    @pytest.fixture
    def state_dir(self, tmp_path: Path) -> Path:
        return tmp_path / ".reme"

    @pytest.fixture
    def open_index(self, index: IndexFactory, state_dir: Path) -> Iterator[Opener]:
        """Open an index over the test's state folder; every one opened is closed afterwards."""
        opened: list[KeywordIndex] = []

        def open_() -> KeywordIndex:
            instance = index(state_dir)
            opened.append(instance)
            return instance

        yield open_
        for instance in reversed(opened):
            instance.close()

    @pytest.fixture
    def filled(self, open_index: Opener) -> KeywordIndex:
        ix = open_index()
        for path, texts in CORPUS.items():
            ix.upsert(path, make_chunks(path, *texts))
        return ix

    # -- basics ------------------------------------------------------------------------------

    def test_upsert_then_search_finds_it(self, filled: KeywordIndex) -> None:
        hits = filled.search("giraffe", 10)
        assert ids(hits) == ["digest/wiki/giraffe.md#0"]
        assert isinstance(hits[0][1], float) and hits[0][1] > 0

    def test_finds_the_right_chunk_of_a_file(self, filled: KeywordIndex) -> None:
        assert ids(filled.search("database password", 10))[0] == "daily/2024-05-01/standup.md#1"

    def test_results_are_best_first_and_limited(self, open_index: Opener) -> None:
        ix = open_index()
        ix.upsert("a.md", make_chunks("a.md", "kestrel"))
        ix.upsert("b.md", make_chunks("b.md", "kestrel kestrel kestrel"))
        ix.upsert("c.md", make_chunks("c.md", "kestrel kestrel"))
        ix.upsert("d.md", make_chunks("d.md", "unrelated words entirely"))
        hits = ix.search("kestrel", 10)
        assert ids(hits) == ["b.md#0", "c.md#0", "a.md#0"]
        scores = [score for _, score in hits]
        assert scores == sorted(scores, reverse=True)
        assert ids(ix.search("kestrel", 2)) == ["b.md#0", "c.md#0"]

    def test_limit_larger_than_corpus(self, open_index: Opener) -> None:
        ix = open_index()
        ix.upsert("a.md", make_chunks("a.md", "otter"))
        ix.upsert("b.md", make_chunks("b.md", "otter otter"))
        assert sorted(ids(ix.search("otter", 1000))) == ["a.md#0", "b.md#0"]

    def test_empty_index_returns_nothing(self, open_index: Opener) -> None:
        assert open_index().search("anything", 10) == []

    def test_unknown_words_return_nothing(self, filled: KeywordIndex) -> None:
        assert filled.search("xylophonist quasar", 10) == []

    def test_stopword_only_query_returns_nothing(self, filled: KeywordIndex) -> None:
        assert filled.search("the and of", 10) == []

    # -- updates -----------------------------------------------------------------------------

    def test_reupsert_replaces_old_text(self, filled: KeywordIndex) -> None:
        path = "digest/wiki/giraffe.md"
        filled.upsert(path, make_chunks(path, "Okapis are the closest living relatives"))
        assert filled.search("giraffe", 10) == []
        assert ids(filled.search("okapi", 10)) == [f"{path}#0"]

    def test_reupsert_with_fewer_chunks_drops_the_rest(self, filled: KeywordIndex) -> None:
        path = "resource/recipes.md"
        filled.upsert(path, make_chunks(path, "Lemon tart recipe"))
        assert filled.search("blind fifteen minutes", 10) == []
        assert ids(filled.search("lemon", 10)) == [f"{path}#0"]

    def test_upsert_of_no_chunks_removes_the_file(self, filled: KeywordIndex) -> None:
        filled.upsert("digest/wiki/falcon.md", [])
        assert filled.search("falcon", 10) == []

    def test_delete_removes(self, filled: KeywordIndex) -> None:
        filled.delete("resource/recipes.md")
        assert filled.search("lemon tart", 10) == []
        assert ids(filled.search("giraffe", 10)) == ["digest/wiki/giraffe.md#0"]

    def test_delete_of_unknown_path_is_harmless(self, filled: KeywordIndex) -> None:
        filled.delete("nowhere.md")
        assert ids(filled.search("falcon", 10)) == ["digest/wiki/falcon.md#0"]

    # -- filtering ---------------------------------------------------------------------------

    def test_allowed_ids_restrict_results(self, filled: KeywordIndex) -> None:
        allowed = {"resource/recipes.md#1", "digest/wiki/giraffe.md#0"}
        assert ids(filled.search("tart lemon", 10, allowed)) == ["resource/recipes.md#1"]

    def test_allowed_ids_filter_inside_retrieval(self, open_index: Opener) -> None:
        # The one allowed chunk scores lowest; a post-filter over the top few would lose it.
        ix = open_index()
        for i in range(30):
            ix.upsert(f"n{i}.md", make_chunks(f"n{i}.md", "heron " * (i + 2)))
        ix.upsert("weak.md", make_chunks("weak.md", "heron and many other unrelated words here"))
        assert ids(ix.search("heron", 1, {"weak.md#0"})) == ["weak.md#0"]

    def test_empty_allowed_ids_return_nothing(self, filled: KeywordIndex) -> None:
        assert filled.search("giraffe", 10, set()) == []

    def test_allowed_ids_unknown_to_the_index(self, filled: KeywordIndex) -> None:
        assert filled.search("giraffe", 10, {"missing.md#0"}) == []

    # -- persistence and maintenance ---------------------------------------------------------

    def test_reopen_after_flush_finds_the_same(
        self, filled: KeywordIndex, open_index: Opener
    ) -> None:
        queries = ["giraffe", "lemon tart", "database password", "falcon"]
        before = [ids(filled.search(q, 10)) for q in queries]
        filled.flush()
        reopened = open_index()
        assert [ids(reopened.search(q, 10)) for q in queries] == before

    def test_reopen_sees_flushed_edits_and_deletes(
        self, filled: KeywordIndex, open_index: Opener
    ) -> None:
        filled.flush()
        filled.upsert("digest/wiki/giraffe.md", make_chunks("digest/wiki/giraffe.md", "okapi"))
        filled.delete("digest/wiki/falcon.md")
        filled.flush()
        reopened = open_index()
        assert reopened.search("giraffe", 10) == []
        assert reopened.search("falcon", 10) == []
        assert ids(reopened.search("okapi", 10)) == ["digest/wiki/giraffe.md#0"]

    def test_clear_empties(self, filled: KeywordIndex, open_index: Opener) -> None:
        filled.flush()
        filled.clear()
        assert filled.search("giraffe", 10) == []
        filled.flush()
        assert open_index().search("giraffe", 10) == []
        filled.upsert("x.md", make_chunks("x.md", "giraffe again"))
        assert ids(filled.search("giraffe", 10)) == ["x.md#0"]

    def test_optimize_keeps_results_identical(self, filled: KeywordIndex) -> None:
        filled.flush()
        path = "digest/wiki/falcon.md"
        filled.upsert(path, make_chunks(path, "Falcon hunting at dawn", "falcon chicks"))
        filled.delete("daily/2024-05-01/standup.md")
        # Queries whose hits have clearly separated scores: exact scores may shift with the
        # collection statistics a merge recomputes, the ranking must not.
        queries = ["giraffe", "lemon tart", "falcon hunting", "database"]
        before = [ids(filled.search(q, 10)) for q in queries]
        filled.optimize()
        assert [ids(filled.search(q, 10)) for q in queries] == before

    def test_stats_is_a_dict(self, filled: KeywordIndex) -> None:
        assert isinstance(filled.stats(), dict)
