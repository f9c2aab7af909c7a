"""What the OpenAI-compatible plugins (embeddings, chat) share: endpoint settings, backoff,
Retry-After, the API key read from the environment on every request, and refusal messages."""

from __future__ import annotations

import math
import os

from pydantic import Field

from reme_core.api import ComponentSettings

MAX_RETRY_AFTER = 60.0


class EndpointSettings(ComponentSettings):
    """Where the endpoint is and how hard to retry it; subclasses add ``model`` and the rest."""

    base_url: str = "https://api.openai.com/v1"
    api_key_env: str = "OPENAI_API_KEY"
    """Environment variable holding the key, read on every request (never stored)."""
    retries: int = Field(3, ge=0)
    """HTTP retries (429, 5xx, timeouts, connection errors) per request."""
    retry_base_delay: float = Field(0.5, ge=0)
    """Seconds before the first retry, doubled for each next one; a server's Retry-After
    (up to 60 s) is honoured unless this is 0."""


def api_key(settings: EndpointSettings) -> str:
    return os.environ.get(settings.api_key_env, "").strip()


def backoff_delay(settings: EndpointSettings, attempt: int, retry_after: float | None) -> float:
    """Seconds to wait before retry number ``attempt`` (1-based)."""
    delay = settings.retry_base_delay * 2 ** (attempt - 1)
    if retry_after is not None and settings.retry_base_delay > 0:
        delay = max(delay, retry_after)
    return delay


def parse_retry_after(value: str | None) -> float | None:
    """A Retry-After header in seconds, capped; None when absent or not a number."""
    try:
        seconds = float(value or "")
    except ValueError:
        return None
    return min(seconds, MAX_RETRY_AFTER) if math.isfinite(seconds) and seconds >= 0 else None


def refusal(settings: EndpointSettings, what: str, status: int, error: str) -> str:
    """A refused request, with a hint about the key on 401/403."""
    message = f"{what} refused the request: {error}"
    if status in (401, 403):
        verb = "check" if api_key(settings) else "set"
        message += f" ({verb} the API key in ${settings.api_key_env})"
    return message
