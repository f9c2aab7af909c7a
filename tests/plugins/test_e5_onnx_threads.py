"""e5-onnx runs a passage batch one text at a time, each run on ``threads`` threads: the same
vectors as one thread, one text at a time, whatever the batch."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from reme_plugins import onnx_session
from reme_plugins.embedding_e5_onnx import E5OnnxEmbedding

TEXTS = [
    "The deploy failed on Friday because orjson was missing from the image.",
    "Zara Fischer was born on the 3rd of May; the team meeting moved to Thursday. " * 12,
    "短い日本語のメモ：会議は木曜日に移動しました。",
    "wifi",
]


def test_the_runs_get_the_threads_and_no_worker_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[int] = []

    def fake_open(path: Path, threads: int = 1, arena: bool = True) -> object:
        opened.append(threads)
        return object()

    monkeypatch.setattr(onnx_session, "open_session", fake_open)
    monkeypatch.setattr(onnx_session, "cores", lambda: 16)
    three = E5OnnxEmbedding(E5OnnxEmbedding.Settings(threads=3))
    assert three._runner.run_threads() == 3
    default = E5OnnxEmbedding(E5OnnxEmbedding.Settings())
    assert default._runner.run_threads() == onnx_session.MAX_RUN_THREADS
    monkeypatch.setattr(onnx_session, "cores", lambda: 2)
    assert default._runner.run_threads() == 2
    runner = onnx_session.OnnxRunner(lambda: Path("m.onnx"), None, "t", arena=True)
    assert runner.run_threads() == 1  # spread over workers instead (minilm-onnx)
    runner.session()
    three._runner._model_path = lambda: Path("m.onnx")
    three._runner.session()
    assert opened == [1, 3]


@pytest.fixture(scope="module")
def embeddings() -> Iterator[dict[int, E5OnnxEmbedding]]:
    made = {n: E5OnnxEmbedding(E5OnnxEmbedding.Settings(threads=n)) for n in (1, 2)}
    yield made
    for embedding in made.values():
        embedding.close()


def test_vectors_are_the_same_on_one_thread_or_two(embeddings: dict) -> None:
    one, two = embeddings[1], embeddings[2]
    batch = two.embed_passages(TEXTS)
    assert two._runner._pool is None  # no worker threads were made
    np.testing.assert_array_equal(one.embed_passages(TEXTS), batch)
    alone = np.stack([one.embed_passages([t])[0] for t in TEXTS])
    np.testing.assert_array_equal(alone, batch)  # a text's vector ignores its neighbours
    np.testing.assert_array_equal(one.embed_query(TEXTS[0]), two.embed_query(TEXTS[0]))
