"""Searches never wait for the slow part of a write, and never see a write half applied.

Threads are coordinated with events and the index lock's own counters, never with sleeps; each
wait has a generous deadline only so that a regression fails the test instead of hanging it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import DEFAULT_PLUGIN_MODULES, FAKE_VECTORS, KEYWORD_ONLY_ENV

from reme_core import hookimpl
from reme_core.plugins import Plugins
from reme_core.runtime import Reme
from reme_plugins.embedding_hash import HashEmbedding

DEADLINE_S = 10.0
OKAPI = "digest/wiki/okapi.md"
OKAPI_TEXT = "# Okapi\n\nThe okapi lives in the Ituri forest.\n"


class GatedHash(HashEmbedding):
    """The hash fake, except that passages wait at a gate once a test closes it."""

    name = "gated_hash"

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.closed = False
        self.waiting = threading.Event()  # a write is inside embed_passages, at the gate
        self.opened = threading.Event()

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if self.closed:
            self.waiting.set()
            assert self.opened.wait(DEADLINE_S), "the test never opened the gate"
        return super().embed_passages(texts)


class Extras:
    @hookimpl
    def register_embeddings(self, register):  # type: ignore[no-untyped-def]
        register(GatedHash)


@pytest.fixture
def plugins() -> Plugins:
    manager = Plugins()
    for module in DEFAULT_PLUGIN_MODULES:
        manager.register(module)
    manager.register(Extras(), name="test_extras")
    manager.collect()
    return manager


@pytest.fixture
def keyword_reme(workspace: Path, plugins: Plugins) -> Iterator[Reme]:
    with Reme.open(workspace, plugins=plugins, env=KEYWORD_ONLY_ENV) as reme:
        reme.index()
        yield reme


@pytest.fixture
def hybrid_reme(workspace: Path, plugins: Plugins) -> Iterator[Reme]:
    overrides = [*FAKE_VECTORS, "components.embedding.name=gated_hash"]
    with Reme.open(workspace, plugins=plugins, env={}, overrides=overrides) as reme:
        reme.index()
        yield reme


class Worker:
    """Runs ``target`` on a thread and keeps its result or its exception."""

    def __init__(self, target: Callable[[], Any]):
        self.result: Any = None
        self.error: BaseException | None = None
        self._target = target
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.result = self._target()
        except BaseException as exc:
            self.error = exc

    def join(self) -> Any:
        self.thread.join(DEADLINE_S)
        assert not self.thread.is_alive(), "the thread did not finish"
        if self.error is not None:
            raise self.error
        return self.result


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for: {what}")
        time.sleep(0.001)


def hit_paths(reme: Reme, query: str) -> list[str]:
    return [hit.path for hit in reme.search(query, limit=10, expand=False).hits]


def test_searches_hold_the_shared_lock_at_the_same_time(
    keyword_reme: Reme, monkeypatch: pytest.MonkeyPatch
) -> None:
    reme = keyword_reme
    seen_readers: list[int] = []
    # The action runs once both searches are inside, before either goes on.
    both_inside = threading.Barrier(
        2, action=lambda: seen_readers.append(reme.indexer.lock.readers), timeout=DEADLINE_S
    )
    search = reme.keyword.search

    def meeting_search(*args: Any, **kwargs: Any) -> Any:
        both_inside.wait()  # broken (an error) unless the other search is inside too
        return search(*args, **kwargs)

    monkeypatch.setattr(reme.keyword, "search", meeting_search)
    workers = [Worker(lambda: hit_paths(reme, "orjson")) for _ in range(2)]
    found = [worker.join() for worker in workers]
    assert seen_readers == [2]
    assert found[0] == found[1] and "daily/2026-11-02/session-deploy-failure.md" in found[0]


def test_a_search_completes_while_a_write_is_embedding(hybrid_reme: Reme) -> None:
    reme = hybrid_reme
    gate = reme.vectors.embedding
    assert isinstance(gate, GatedHash)
    before = reme.search("orjson deploy", limit=5)
    gate.closed = True
    try:
        write = Worker(lambda: reme.files.write(OKAPI, OKAPI_TEXT))
        assert gate.waiting.wait(DEADLINE_S), "the write never reached the embedding"
        during = reme.search("orjson deploy", limit=5)
        okapi = reme.search("okapi ituri forest", limit=10)
        assert write.thread.is_alive()  # still embedding: the searches did not wait for it
    finally:
        gate.opened.set()
    assert write.join().created
    assert during.arms == ["keyword", "vector"] and during.hits == before.hits
    # The write was not applied yet, so no arm could see any of it.
    assert OKAPI not in [hit.path for hit in okapi.hits]
    after = reme.search("okapi ituri forest", limit=3).hits
    assert after[0].path == OKAPI and set(after[0].arm_ranks) == {"keyword", "vector"}


def test_a_write_waits_for_searches_in_flight_and_later_searches_see_it(
    keyword_reme: Reme, monkeypatch: pytest.MonkeyPatch
) -> None:
    reme = keyword_reme
    inside, go_on = threading.Event(), threading.Event()
    search = reme.keyword.search
    calls: list[str] = []

    def slow_first_search(query: str, *args: Any, **kwargs: Any) -> Any:
        calls.append(query)
        if len(calls) == 1:
            inside.set()
            assert go_on.wait(DEADLINE_S)
        return search(query, *args, **kwargs)

    monkeypatch.setattr(reme.keyword, "search", slow_first_search)
    lock = reme.indexer.lock
    try:
        first = Worker(lambda: hit_paths(reme, "okapi"))
        assert inside.wait(DEADLINE_S)
        write = Worker(lambda: reme.files.write(OKAPI, OKAPI_TEXT))
        wait_until(lambda: lock.waiting_writers == 1, "the write to wait for the search")
        assert write.thread.is_alive()
        # A search that starts now queues behind the waiting write, so it will see the note.
        second = Worker(lambda: hit_paths(reme, "okapi"))
        wait_until(lambda: lock.waiting_readers == 1, "the second search to queue")
        assert calls == ["okapi"]
    finally:
        go_on.set()
    assert first.join() == []  # it began before the write was applied
    assert write.join().created
    assert second.join() == [OKAPI]


def test_searches_never_see_a_torn_update(hybrid_reme: Reme) -> None:
    """A note flips between two texts with the same chunk ids while searches run: every hit's
    text (from the catalog) matches the arm that found it (keyword index, vector store)."""
    reme = hybrid_reme
    path = "digest/wiki/flip.md"
    words = ("quagga", "zorilla")
    texts = {w: f"# Flip\n\nToday's animal is the {w}, seen {w} near the river.\n" for w in words}
    embedding = reme.vectors.embedding
    writes = 60
    checked: list[int] = []
    problems: list[str] = []

    def write_stream() -> None:
        for n in range(writes):
            reme.files.write(path, texts[words[n % 2]])

    def check(word: str) -> None:
        query = embedding.embed_query(word)
        for hit in reme.search(word, limit=5, expand=False).hits:
            if hit.path != path:
                continue
            checked.append(1)
            if "keyword" in hit.arm_ranks and word not in hit.text:
                problems.append(f"keyword hit for {word!r} has text {hit.text!r}")
            if "vector" in hit.arm_ranks:
                passage = embedding.embed_passages([embedding.truncate(hit.text)])[0]
                expected = float(np.dot(query, passage))
                if abs(hit.arm_scores["vector"] - expected) > 1e-4:
                    problems.append(f"vector score of {hit.text!r} is from another text")

    def search_stream() -> None:
        while writer.thread.is_alive() and not problems:
            for word in words:
                check(word)

    writer = Worker(write_stream)
    searchers = [Worker(search_stream) for _ in range(2)]
    writer.join()
    for searcher in searchers:
        searcher.join()
    for word in words:  # the final text is found, so the checks above were not vacuous
        check(word)
    assert problems == []
    assert checked


def test_a_rebuild_serves_the_old_index_until_it_is_ready(
    keyword_reme: Reme, monkeypatch: pytest.MonkeyPatch
) -> None:
    reme = keyword_reme
    before = hit_paths(reme, "orjson")
    chunker = reme.indexer.chunkers[".md"]
    chunk = chunker.chunk
    inside, go_on = threading.Event(), threading.Event()

    def slow_chunk(*args: Any, **kwargs: Any) -> Any:
        inside.set()
        assert go_on.wait(DEADLINE_S)
        return chunk(*args, **kwargs)

    monkeypatch.setattr(chunker, "chunk", slow_chunk)
    try:
        rebuild = Worker(reme.reindex)
        assert inside.wait(DEADLINE_S)
        during = hit_paths(reme, "orjson")  # the rebuild is reading notes: nothing cleared yet
        assert rebuild.thread.is_alive()
    finally:
        go_on.set()
    assert during == before and before
    assert rebuild.join().problems == {}
    assert hit_paths(reme, "orjson") == before
