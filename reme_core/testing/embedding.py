"""Conformance suite for ``Embedding`` implementations.

Use it from a plugin's tests by subclassing and overriding one fixture::

    class TestMyEmbedding(EmbeddingConformance):
        @pytest.fixture
        def embedding(self):
            return MyEmbedding(MyEmbedding.Settings())

A model that is slow to load should come from a module- or session-scoped fixture that this one
returns. Set ``semantic = False`` for a fake that knows nothing of meaning (the paraphrase test is
then skipped). Texts are kept short so that a real model on a small CPU passes in seconds.
"""

from __future__ import annotations

import threading
from typing import ClassVar

import numpy as np
import pytest

from reme_core.components import Embedding

PARAPHRASE = (
    "How much protein should I eat every day?",
    "What is the recommended daily intake of protein?",
)
UNRELATED = "The train to Lisbon leaves from platform four at noon."
CJK_TEXTS = (
    "今天天气很好我们去公园散步吧。",
    "東京の桜は四月に咲きます。",
    "한국어 문장도 됩니다.",
)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def long_text(embedding: Embedding, sentence: str = "The quick brown fox jumps over it. ") -> str:
    """Repeat ``sentence`` until the text is over the model's ``max_tokens``."""
    text = sentence
    while embedding.count_tokens(text) <= embedding.max_tokens:
        text *= 2
    return text


class EmbeddingConformance:
    """The ``Embedding`` contract. Not collected by itself (no ``Test`` prefix): subclass it."""

    semantic: ClassVar[bool] = True
    """False for fakes: skips the check that a paraphrase beats an unrelated text."""
    atol: ClassVar[float] = 1e-5
    """How far the same text may move between calls (batching can shift the last bits)."""

    @pytest.fixture
    def embedding(self) -> Embedding:
        """Override: return the embedding under test."""
        raise NotImplementedError("subclasses of EmbeddingConformance must override embedding")

    def test_model_id_and_dim(self, embedding: Embedding) -> None:
        assert isinstance(embedding.model_id, str) and embedding.model_id.strip()
        assert isinstance(embedding.dim, int) and embedding.dim > 0
        assert isinstance(embedding.max_tokens, int) and embedding.max_tokens > 0

    def test_shapes_and_dtype(self, embedding: Embedding) -> None:
        passages = embedding.embed_passages(["first text", "second text", "third"])
        query = embedding.embed_query("a question")
        assert passages.shape == (3, embedding.dim)
        assert passages.dtype == np.float32
        assert query.shape == (embedding.dim,)
        assert query.dtype == np.float32

    def test_rows_are_unit_norm_and_finite(self, embedding: Embedding) -> None:
        passages = embedding.embed_passages(["alpha beta", "x", "", "  \n\t "])
        assert np.isfinite(passages).all()
        np.testing.assert_allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-4)
        np.testing.assert_allclose(np.linalg.norm(embedding.embed_query("gamma")), 1.0, atol=1e-4)
        np.testing.assert_allclose(np.linalg.norm(embedding.embed_query("")), 1.0, atol=1e-4)

    def test_empty_list(self, embedding: Embedding) -> None:
        empty = embedding.embed_passages([])
        assert empty.shape == (0, embedding.dim)
        assert empty.dtype == np.float32

    def test_deterministic_and_independent_of_batching(self, embedding: Embedding) -> None:
        texts = ["the cat sat on the mat", "a dog barked at the mailman", "rain again today"]
        together = embedding.embed_passages(texts)
        again = embedding.embed_passages(texts)
        alone = np.stack([embedding.embed_passages([t])[0] for t in texts])
        np.testing.assert_allclose(together, again, atol=self.atol)
        np.testing.assert_allclose(together, alone, atol=self.atol)
        np.testing.assert_allclose(
            embedding.embed_query(texts[0]), embedding.embed_query(texts[0]), atol=self.atol
        )

    def test_different_texts_give_different_vectors(self, embedding: Embedding) -> None:
        a, b = embedding.embed_passages(["the cat sat on the mat", UNRELATED])
        assert cosine(a, b) < 0.99

    def test_query_finds_its_passage(self, embedding: Embedding) -> None:
        passages = embedding.embed_passages([PARAPHRASE[0], UNRELATED])
        query = embedding.embed_query(PARAPHRASE[0])
        scores = passages @ query
        assert scores[0] > scores[1]

    def test_paraphrase_beats_unrelated(self, embedding: Embedding) -> None:
        if not self.semantic:
            pytest.skip("this embedding is a fake without a notion of meaning")
        first, paraphrase, unrelated = embedding.embed_passages([*PARAPHRASE, UNRELATED])
        assert cosine(first, paraphrase) > cosine(first, unrelated)
        query = embedding.embed_query(PARAPHRASE[1])
        assert cosine(query, first) > cosine(query, unrelated)

    def test_truncate_fits_and_is_a_prefix(self, embedding: Embedding) -> None:
        text = long_text(embedding)
        cut = embedding.truncate(text)
        assert embedding.count_tokens(cut) <= embedding.max_tokens
        assert text.startswith(cut)
        assert len(cut) > len(text) // 4  # it keeps most of what fits, not a sliver
        assert embedding.truncate("short text") == "short text"

    def test_long_text_embeds_as_its_truncation(self, embedding: Embedding) -> None:
        text = long_text(embedding)
        whole, cut = embedding.embed_passages([text, embedding.truncate(text)])
        np.testing.assert_allclose(np.linalg.norm(whole), 1.0, atol=1e-4)
        np.testing.assert_allclose(whole, cut, atol=1e-4)

    def test_count_tokens_grows_with_text(self, embedding: Embedding) -> None:
        one = embedding.count_tokens("word " * 10)
        assert one > 0
        assert embedding.count_tokens("word " * 40) > one

    def test_cjk_text(self, embedding: Embedding) -> None:
        vectors = embedding.embed_passages(list(CJK_TEXTS))
        assert vectors.shape == (len(CJK_TEXTS), embedding.dim)
        assert np.isfinite(vectors).all()
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
        assert all(embedding.count_tokens(t) > 0 for t in CJK_TEXTS)
        long_cjk = long_text(embedding, CJK_TEXTS[0])
        cut = embedding.truncate(long_cjk)
        assert long_cjk.startswith(cut) and cut
        assert embedding.count_tokens(cut) <= embedding.max_tokens
        query = embedding.embed_query(CJK_TEXTS[1])
        assert query.shape == (embedding.dim,) and np.isfinite(query).all()

    def test_concurrent_calls_match_sequential(self, embedding: Embedding) -> None:
        texts = [f"note number {i} about topic {i % 3}" for i in range(6)]
        expected = [embedding.embed_query(t) for t in texts]
        results: dict[int, np.ndarray] = {}
        errors: list[BaseException] = []

        def work(i: int) -> None:
            try:
                results[i] = embedding.embed_query(texts[i])
            except BaseException as exc:  # surfaced below; a thread would swallow it
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(len(texts))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors
        for i, vector in enumerate(expected):
            np.testing.assert_allclose(results[i], vector, atol=self.atol)
