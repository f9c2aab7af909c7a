"""The catalog's change log and the allowed-id sets searches keep current with it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
from conftest import KEYWORD_ONLY_ENV, copy_example

from reme_core.index import catalog as catalog_module
from reme_core.index.catalog import Catalog
from reme_core.plugins import Plugins
from reme_core.runtime import Reme
from reme_core.schema import Chunk, NoteSummary, SearchFilters
from reme_core.search import allowed as allowed_module
from reme_core.search.allowed import AllowedCache
from tests.search.allowed_reference import reference_chunk_ids

DEADLINE_S = 10.0


def note(path: str, text: str = "hello") -> tuple[NoteSummary, list[Chunk]]:
    summary = NoteSummary(path=path, content_hash=path, size=len(text))
    return summary, [Chunk(path=path, ordinal=0, start_line=1, end_line=1, text=text)]


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[Catalog]:
    opened = Catalog(tmp_path / "catalog.sqlite3")
    yield opened
    opened.close()


def test_changed_since_names_the_paths_put_or_removed_after_a_generation(catalog: Catalog):
    start = catalog.generation
    catalog.put(*note("a.md"))
    middle = catalog.generation
    catalog.put(*note("b.md"))
    catalog.remove("a.md")
    assert catalog.changed_since(start) == {"a.md", "b.md"}
    assert catalog.changed_since(middle) == {"a.md", "b.md"}
    assert catalog.changed_since(catalog.generation) == set()
    catalog.set_problem("c.md", "binary")  # no chunk changed: not a change
    assert catalog.changed_since(catalog.generation) == set()


def test_changed_since_is_unknown_after_a_clear_or_too_many_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(catalog_module, "CHANGE_LOG", 3)
    catalog = Catalog(tmp_path / "catalog.sqlite3")
    try:
        start = catalog.generation
        for name in "abc":
            catalog.put(*note(f"{name}.md"))
        assert catalog.changed_since(start) == {"a.md", "b.md", "c.md"}
        catalog.put(*note("d.md"))  # a.md's entry is forgotten
        assert catalog.changed_since(start) is None
        assert catalog.changed_since(start + 1) == {"b.md", "c.md", "d.md"}
        before_clear = catalog.generation
        catalog.clear()
        assert catalog.changed_since(before_clear) is None
        assert catalog.changed_since(catalog.generation) == set()
    finally:
        catalog.close()


def test_reads_see_committed_rows_from_their_own_connections(catalog: Catalog):
    catalog.put(*note("a.md", "first"))
    assert catalog.chunks(["a.md#0"])["a.md#0"].text == "first"
    seen: list[str] = []
    reader = threading.Thread(target=lambda: seen.append(catalog.chunks(["a.md#0"])["a.md#0"].text))
    reader.start()
    reader.join(DEADLINE_S)
    catalog.put(*note("a.md", "second"))
    assert seen == ["first"] and catalog.chunks(["a.md#0"])["a.md#0"].text == "second"
    catalog.close()
    with pytest.raises(Exception, match="closed"):
        catalog.hashes()


# -- allowed sets over a real workspace ----------------------------------------------------------


@pytest.fixture
def reme(tmp_path: Path, default_plugins: Plugins) -> Iterator[Reme]:
    root = tmp_path / "ws"
    copy_example(root)
    with Reme.open(root, plugins=default_plugins, env=KEYWORD_ONLY_ENV) as opened:
        opened.index()
        yield opened


FILTER_SETS = [
    SearchFilters(),
    SearchFilters(statuses=["active", "archived", "superseded"]),
    SearchFilters(tags=["postgres"]),
    SearchFilters(paths=["digest/**"]),
    SearchFilters(statuses=["archived"], since="2026-01-01"),
]


def test_allowed_sets_follow_every_kind_of_write(reme: Reme, monkeypatch: pytest.MonkeyPatch):
    cache = AllowedCache(reme.catalog, reme.tags)
    lookups: list[set[str] | None] = []
    chunked_paths = reme.catalog.chunked_paths

    def spy(**kwargs: Any) -> set[str]:
        lookups.append(kwargs.get("paths"))
        return chunked_paths(**kwargs)

    def check() -> list[set[str] | None]:
        """Each cached set equals a fresh computation; returns the cache's own lookups."""
        lookups.clear()
        answers = [cache.get(filters) for filters in FILTER_SETS]
        made = list(lookups)
        for filters, answer in zip(FILTER_SETS, answers, strict=True):
            assert answer.ids == reference_chunk_ids(filters, reme.catalog, reme.tags)
            assert answer.paths == {cid.rsplit("#", 1)[0] for cid in answer.ids}
        return made

    monkeypatch.setattr(reme.catalog, "chunked_paths", spy)
    assert len(check()) == len(FILTER_SETS)  # the first time: one full lookup per filter set
    assert check() == []  # nothing changed: all cached
    new = "digest/wiki/pgbouncer.md"
    writes = [
        lambda: reme.files.write(new, "---\ntags: [postgres]\n---\n# PgBouncer\n\npooling\n"),
        lambda: reme.files.update_frontmatter(new, {"status": "archived", "date": "2026-02-01"}),
        lambda: reme.files.update_frontmatter(new, {"tags": ["pooling"]}),
        lambda: reme.files.move(new, "daily/2026-11-29/pgbouncer.md"),
        lambda: reme.files.delete("daily/2026-11-29/pgbouncer.md"),
    ]
    for write in writes:
        write()
        made = check()
        # Each filter set looked up only the notes the write changed, never every chunk.
        assert len(made) == len(FILTER_SETS)
        assert all(paths is not None and len(paths) <= 2 for paths in made)


def test_searches_needing_the_same_set_compute_it_once(reme: Reme, monkeypatch: pytest.MonkeyPatch):
    cache = AllowedCache(reme.catalog, reme.tags)
    computing, go_on, waiting = threading.Event(), threading.Event(), threading.Event()
    calls: list[int] = []
    chunked_paths = reme.catalog.chunked_paths

    def slow_chunked_paths(**kwargs: Any) -> set[str]:
        calls.append(1)
        computing.set()
        assert go_on.wait(DEADLINE_S)
        return chunked_paths(**kwargs)

    class SignallingFuture(Future):
        def result(self, timeout: float | None = None) -> Any:
            waiting.set()  # a second search waits for the first one's answer
            return super().result(timeout)

    monkeypatch.setattr(reme.catalog, "chunked_paths", slow_chunked_paths)
    monkeypatch.setattr(allowed_module, "Future", SignallingFuture)
    answers: list[Any] = []
    threads = [threading.Thread(target=lambda: answers.append(cache.get(SearchFilters())))]
    threads[0].start()
    try:
        assert computing.wait(DEADLINE_S)
        threads.append(threading.Thread(target=lambda: answers.append(cache.get(SearchFilters()))))
        threads[1].start()
        assert waiting.wait(DEADLINE_S)
    finally:
        go_on.set()
    for thread in threads:
        thread.join(DEADLINE_S)
    assert len(answers) == 2 and answers[0] is answers[1]
    assert calls == [1]
