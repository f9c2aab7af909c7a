"""A deterministic fake embedding for tests: words hashed into signed buckets (feature hashing).

No model, no network, instant. Tokens are lower-cased words, and each CJK character is a token of
its own (CJK is written without spaces). Each token adds +1 or -1 to one of ``dim`` buckets, both
chosen by a keyed BLAKE2 hash, so vectors are the same in every process (unlike ``hash()``).
Identical texts give identical vectors; texts sharing words have a positive cosine unless bucket
collisions outweigh the shared words, which is rare at the default 64 buckets. It knows nothing
of meaning: a paraphrase with other words scores like an unrelated text.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from typing import ClassVar

import numpy as np
from pydantic import Field

from reme_core.api import ComponentSettings, Embedding, hookimpl

_CJK = "\u2e80-\u9fff\uac00-\ud7af"
TOKEN = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+")
# A text without tokens still needs a unit vector: it gets this token's.
_EMPTY_TOKEN = "\x00empty"


def tokens(text: str) -> list[str]:
    """Lower-cased words, each CJK character on its own."""
    return TOKEN.findall(text.casefold())


class HashEmbedding(Embedding):
    """Feature-hashed bag of words, L2-normalised; ``model_id`` is ``hash-<dim>``."""

    name: ClassVar[str] = "hash"

    class Settings(ComponentSettings):
        dim: int = Field(64, ge=2, le=65536)
        max_tokens: int = Field(512, ge=1)
        """Tokens (words) read per text; the rest is dropped, as a real model would."""

    settings: Settings

    @property
    def model_id(self) -> str:
        return f"hash-{self.settings.dim}"

    @property
    def dim(self) -> int:
        return self.settings.dim

    @property
    def max_tokens(self) -> int:
        return self.settings.max_tokens

    def count_tokens(self, text: str) -> int:
        """Words (and CJK characters) in ``text``."""
        return len(tokens(text))

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row] = self._vector(text)
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self._vector(text)

    def _vector(self, text: str) -> np.ndarray:
        vec = np.zeros(self.dim, dtype=np.float32)
        for token in tokens(text)[: self.max_tokens]:
            self._add(vec, token)
        norm = float(np.linalg.norm(vec))
        if norm == 0.0:  # no tokens, or collisions that cancelled out
            self._add(vec, _EMPTY_TOKEN)
            norm = 1.0
        return vec / np.float32(norm)

    def _add(self, vec: np.ndarray, token: str) -> None:
        digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        vec[(value >> 1) % self.dim] += 1.0 if value & 1 else -1.0


@hookimpl
def register_embeddings(register: Callable[[type[Embedding]], None]) -> None:
    """Register the hashing fake as ``hash``."""
    register(HashEmbedding)
