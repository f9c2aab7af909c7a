"""Conformance suite for ``TagIndex`` implementations.

Use it from a plugin's tests by subclassing and overriding one fixture::

    class TestMyTags(TagIndexConformance):
        @pytest.fixture
        def make_tag_index(self, tmp_path):
            context = ComponentContext(workspace=tmp_path, state_dir=tmp_path / ".reme")
            return lambda: MyTags(MyTags.Settings(), context)

``make_tag_index`` returns a factory; every call must build a fresh instance over the same state.
Set ``persistent = False`` for an in-memory index. Tag names in ``tags()`` are compared
case-insensitively, since the contract leaves the stored spelling to the implementation.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import ClassVar

import pytest

from reme_core.components import TagIndex

TagIndexFactory = Callable[[], TagIndex]


def folded(counts: dict[str, int]) -> dict[str, int]:
    """Tag counts keyed by lower-cased tag."""
    return {tag.lower(): n for tag, n in counts.items()}


class TagIndexConformance:
    """The ``TagIndex`` contract. Not collected by itself (no ``Test`` prefix): subclass it."""

    persistent: ClassVar[bool] = True

    @pytest.fixture
    def make_tag_index(self, tmp_path) -> TagIndexFactory:
        """Override: return a factory building the tag index under test over ``tmp_path``."""
        raise NotImplementedError("subclasses of TagIndexConformance must override make_tag_index")

    @pytest.fixture
    def index(self, make_tag_index: TagIndexFactory) -> Iterator[TagIndex]:
        idx = make_tag_index()
        yield idx
        idx.close()

    @pytest.fixture
    def filled(self, index: TagIndex) -> TagIndex:
        index.set_tags("a.md", ["project/reme", "meeting"])
        index.set_tags("b.md", ["project", "Urgent"])
        index.set_tags("c.md", ["projects", "meeting"])
        index.set_tags("d.md", ["project/reme/v2"])
        index.set_tags("e.md", [])
        return index

    def test_empty_index(self, index: TagIndex) -> None:
        assert index.tags() == {}
        assert index.tags("a.md") == {}
        assert index.paths(["x"]) == set()

    def test_tags_of_one_path_and_counts_over_workspace(self, filled: TagIndex) -> None:
        assert folded(filled.tags("a.md")) == {"project/reme": 1, "meeting": 1}
        assert filled.tags("e.md") == {}
        assert folded(filled.tags()) == {
            "project/reme": 1,
            "project": 1,
            "projects": 1,
            "project/reme/v2": 1,
            "meeting": 2,
            "urgent": 1,
        }

    def test_paths_any_and_all(self, filled: TagIndex) -> None:
        assert filled.paths(["meeting"]) == {"a.md", "c.md"}
        assert filled.paths(["meeting", "urgent"], "any") == {"a.md", "b.md", "c.md"}
        assert filled.paths(["meeting", "project"], "all") == {"a.md"}
        assert filled.paths(["meeting", "urgent"], "all") == set()
        assert filled.paths(["nothing", "meeting"], "any") == {"a.md", "c.md"}
        assert filled.paths(["nothing", "meeting"], "all") == set()

    def test_default_mode_is_any(self, filled: TagIndex) -> None:
        assert filled.paths(["urgent", "projects"]) == {"b.md", "c.md"}

    def test_tags_compare_case_insensitively(self, filled: TagIndex) -> None:
        assert filled.paths(["URGENT"]) == {"b.md"}
        assert filled.paths(["Project/ReMe"]) == {"a.md", "d.md"}
        filled.set_tags("f.md", ["MEETING"])
        assert filled.paths(["meeting"]) == {"a.md", "c.md", "f.md"}
        assert folded(filled.tags())["meeting"] == 3

    def test_a_tag_matches_its_nested_tags_but_not_longer_names(self, filled: TagIndex) -> None:
        assert filled.paths(["project"]) == {"a.md", "b.md", "d.md"}
        assert filled.paths(["project/reme"]) == {"a.md", "d.md"}
        assert filled.paths(["project/reme/v2"]) == {"d.md"}
        assert filled.paths(["proj"]) == set()
        assert filled.paths(["projects"]) == {"c.md"}
        assert filled.paths(["reme"]) == set()

    def test_nested_match_in_all_mode(self, filled: TagIndex) -> None:
        assert filled.paths(["project", "meeting"], "all") == {"a.md"}

    def test_empty_tag_list_matches_nothing(self, filled: TagIndex) -> None:
        assert filled.paths([], "any") == set()
        assert filled.paths([], "all") == set()

    def test_set_tags_replaces(self, filled: TagIndex) -> None:
        filled.set_tags("a.md", ["other"])
        assert folded(filled.tags("a.md")) == {"other": 1}
        assert filled.paths(["meeting"]) == {"c.md"}
        assert "project/reme" not in folded(filled.tags())

    def test_duplicate_tags_count_once(self, index: TagIndex) -> None:
        index.set_tags("a.md", ["x", "X", "x"])
        assert folded(index.tags("a.md")) == {"x": 1}
        assert folded(index.tags()) == {"x": 1}

    def test_set_tags_accepts_any_iterable(self, index: TagIndex) -> None:
        index.set_tags("a.md", (t for t in ["one", "two"]))
        assert folded(index.tags("a.md")) == {"one": 1, "two": 1}

    def test_remove(self, filled: TagIndex) -> None:
        filled.remove("a.md")
        assert filled.tags("a.md") == {}
        assert filled.paths(["meeting"]) == {"c.md"}
        assert folded(filled.tags())["meeting"] == 1
        filled.remove("nope.md")  # unknown path: no error
        assert filled.paths(["urgent"]) == {"b.md"}

    def test_clear(self, filled: TagIndex) -> None:
        filled.clear()
        assert filled.tags() == {}
        assert filled.paths(["project"]) == set()
        filled.set_tags("z.md", ["fresh"])
        assert filled.paths(["fresh"]) == {"z.md"}

    def test_state_survives_close_and_reopen(self, make_tag_index: TagIndexFactory) -> None:
        if not self.persistent:
            pytest.skip("in-memory tag index")
        first = make_tag_index()
        first.set_tags("a.md", ["alpha", "beta/gamma"])
        first.set_tags("b.md", ["alpha"])
        first.remove("b.md")
        first.close()
        second = make_tag_index()
        try:
            assert folded(second.tags()) == {"alpha": 1, "beta/gamma": 1}
            assert second.paths(["beta"]) == {"a.md"}
        finally:
            second.close()

    def test_concurrent_writers_from_threads(self, index: TagIndex) -> None:
        errors: list[BaseException] = []

        def write(worker: int) -> None:
            try:
                for i in range(40):
                    index.set_tags(f"w{worker}/n{i}.md", ["shared", f"worker/{worker}"])
                    index.paths(["shared"])
            except BaseException as exc:  # surfaced below; a thread's exception is otherwise lost
                errors.append(exc)

        threads = [threading.Thread(target=write, args=(w,)) for w in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert len(index.paths(["shared"])) == 160
        assert len(index.paths(["worker"])) == 160
        assert folded(index.tags())["worker/2"] == 40
