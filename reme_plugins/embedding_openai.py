"""Embeddings from any OpenAI-compatible ``/v1/embeddings`` endpoint (OpenAI, vLLM, Ollama, ...).

The API key is read from an environment variable (``api_key_env``) on every request and never
kept in settings, so it cannot leak into a dumped config or a benchmark record. Without it no
``Authorization`` header is sent, which is what local servers expect.

429, 5xx, timeouts and connection errors are retried with exponential backoff; any other error,
and any response that is not what the API promises (bad JSON, missing or duplicate indexes, a
vector of the wrong length, NaN), is an ``EmbeddingError`` at once. Vectors are put back in
input order by their ``index`` and L2-normalised. Token counts are estimates (the tokenizer is
the server's), so ``max_tokens`` defaults to OpenAI's 8191 and texts are cut by that estimate.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urlsplit

import numpy as np
from pydantic import Field

from reme_core.api import (
    ComponentContext,
    ComponentSettings,
    Embedding,
    EmbeddingError,
    estimate_tokens,
    hookimpl,
    required_settings,
)
from reme_plugins.openai_endpoint import (
    EndpointSettings,
    api_key,
    backoff_delay,
    parse_retry_after,
    refusal,
)

if TYPE_CHECKING:
    import httpx

log = logging.getLogger(__name__)


class OpenAIEmbedding(Embedding):
    """An OpenAI-compatible embeddings endpoint; ``dim`` comes from settings or the first reply."""

    name: ClassVar[str] = "openai"

    class Settings(EndpointSettings):
        model: str = Field(min_length=1)
        """The endpoint's model name, e.g. ``text-embedding-3-small``. Required."""
        dimensions: int | None = Field(None, ge=1)
        """Ask the server for this many dimensions (models that support it); None: its default."""
        batch_size: int = Field(64, ge=1, le=2048)
        timeout: float = Field(30.0, gt=0)
        query_prefix: str = ""
        passage_prefix: str = ""
        max_tokens: int = Field(8191, ge=1)

    settings: Settings

    def __init__(
        self, settings: ComponentSettings | None = None, context: ComponentContext | None = None
    ):
        missing = (
            "the openai embedding needs settings.model: the endpoint's model name "
            "(for example text-embedding-3-small)"
        )
        super().__init__(required_settings(settings, self.Settings, missing), context)
        self._lock = threading.Lock()
        self._client: httpx.Client | None = None
        self._dim: int | None = self.settings.dimensions

    @property
    def model_id(self) -> str:
        """``openai:<host>/<model>``, plus ``@<dimensions>`` and a hash of the passage prefix.

        The host is part of it: the same model name on two servers may be two models.
        """
        s = self.settings
        host = urlsplit(s.base_url).netloc or s.base_url
        model_id = f"openai:{host}/{s.model}"
        if s.dimensions:
            model_id += f"@{s.dimensions}"
        if s.passage_prefix:
            model_id += "+" + hashlib.sha256(s.passage_prefix.encode()).hexdigest()[:8]
        return model_id

    @property
    def dim(self) -> int:
        if self._dim is None:
            self.embed_passages(["dimension probe"])  # the first reply fixes it
        assert self._dim is not None
        return self._dim

    @property
    def max_tokens(self) -> int:
        return self.settings.max_tokens

    def count_tokens(self, text: str) -> int:
        """Estimated tokens of ``text`` with the passage prefix."""
        return estimate_tokens(self.settings.passage_prefix + text)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        inputs = [self._prepare(t, self.settings.passage_prefix) for t in texts]
        if not inputs:
            return np.zeros((0, self.dim), dtype=np.float32)
        size = self.settings.batch_size
        parts = [self._embed_batch(inputs[i : i + size]) for i in range(0, len(inputs), size)]
        return np.concatenate(parts)

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed_batch([self._prepare(text, self.settings.query_prefix)])[0]

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    # -- internals ---------------------------------------------------------------------------

    def _prepare(self, text: str, prefix: str) -> str:
        limit = self.max_tokens
        if estimate_tokens(prefix + text) > limit:
            low, high = 0, len(text)  # the longest prefix of text that fits (the estimate grows)
            while low < high:
                mid = (low + high + 1) // 2
                if estimate_tokens(prefix + text[:mid]) <= limit:
                    low = mid
                else:
                    high = mid - 1
            text = text[:low]
        # OpenAI rejects an empty input; a space embeds "nothing" just as well.
        return prefix + text if prefix or text else " "

    def _client_for_call(self) -> httpx.Client:
        import httpx

        with self._lock:
            if self._client is None:
                self._client = httpx.Client(timeout=self.settings.timeout)
            return self._client

    def _embed_batch(self, inputs: list[str]) -> np.ndarray:
        import httpx  # on first use: registering the plugin must not need it

        s = self.settings
        body: dict[str, Any] = {"model": s.model, "input": inputs, "encoding_format": "float"}
        if s.dimensions:
            body["dimensions"] = s.dimensions
        url = s.base_url.rstrip("/") + "/embeddings"
        last_error = ""
        last_retry_after: float | None = None
        for attempt in range(s.retries + 1):
            if attempt:
                time.sleep(self._delay(attempt, last_retry_after))
            last_retry_after = None
            try:
                response = self._client_for_call().post(url, json=body, headers=self._headers())
            except httpx.TimeoutException:
                last_error = f"no answer within {s.timeout:g}s"
            except httpx.TransportError as exc:
                last_error = f"cannot reach {url}: {exc}"
            else:
                if response.status_code == 200:
                    return self._parse(response, len(inputs))
                last_error = f"HTTP {response.status_code}: {_error_message(response)}"
                if response.status_code != 429 and response.status_code < 500:
                    raise EmbeddingError(self._refused(response, last_error))
                last_retry_after = _retry_after(response)
            if attempt < s.retries:
                log.warning("embedding request failed (%s); retrying", last_error)
        tries = s.retries + 1
        raise EmbeddingError(
            f"embedding endpoint {url} failed {tries} time{'s' * (tries > 1)}: {last_error}"
        )

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        return backoff_delay(self.settings, attempt, retry_after)

    def _headers(self) -> dict[str, str]:
        key = api_key(self.settings)
        return {"Authorization": f"Bearer {key}"} if key else {}

    def _refused(self, response: httpx.Response, error: str) -> str:
        what = f"embedding endpoint for model {self.settings.model!r}"
        return refusal(self.settings, what, response.status_code, error)

    def _parse(self, response: httpx.Response, count: int) -> np.ndarray:
        try:
            payload = response.json()
            items = payload["data"]
            if not isinstance(items, list):
                raise TypeError("'data' is not a list")
            rows: list[Any] = [None] * count
            for position, item in enumerate(items):
                index = item.get("index", position)
                if not isinstance(index, int) or not 0 <= index < count or rows[index] is not None:
                    raise ValueError(f"bad or repeated index {index!r}")
                rows[index] = item["embedding"]
            if any(row is None for row in rows):
                raise ValueError(f"{len(items)} vectors for {count} inputs")
            if len({len(row) for row in rows}) != 1:
                raise ValueError("vectors of different lengths in one reply")
            vectors = np.asarray(rows, dtype=np.float32)
            if vectors.ndim != 2 or vectors.shape[1] == 0:
                raise ValueError("vectors are not flat lists of numbers")
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise EmbeddingError(
                f"the embedding endpoint returned an unusable reply: {exc}"
            ) from exc
        return self._checked(vectors)

    def _checked(self, vectors: np.ndarray) -> np.ndarray:
        got = vectors.shape[1]
        with self._lock:
            if self._dim is None:
                self._dim = got
            expected = self._dim
        if got != expected:
            why = "settings.dimensions" if self.settings.dimensions else "earlier replies"
            raise EmbeddingError(
                f"the embedding endpoint returned {got}-dimensional vectors, "
                f"expected {expected} ({why})"
            )
        if not np.isfinite(vectors).all():
            raise EmbeddingError("the embedding endpoint returned NaN or infinite values")
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        if (norms == 0).any():
            raise EmbeddingError("the embedding endpoint returned a zero vector")
        return np.ascontiguousarray(vectors / norms, dtype=np.float32)


def _error_message(response: httpx.Response) -> str:
    try:
        message = response.json()["error"]["message"]
    except (ValueError, KeyError, TypeError):
        message = response.text
    return str(message).strip()[:300] or response.reason_phrase


def _retry_after(response: httpx.Response) -> float | None:
    return parse_retry_after(response.headers.get("retry-after"))


@hookimpl
def register_embeddings(register: Callable[[type[Embedding]], None]) -> None:
    """Register the OpenAI-compatible endpoint client as ``openai``."""
    register(OpenAIEmbedding)
