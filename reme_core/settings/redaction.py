"""The effective configuration for display (``reme config show``), with secrets hidden."""

from __future__ import annotations

from typing import Any

from reme_core.settings.schema import Settings

SECRET_WORDS = ("key", "token", "secret", "password")


def redacted(settings: Settings) -> dict[str, Any]:
    """The effective config as plain data with secrets as ``***`` (for ``reme config show``)."""
    return _redact(settings.model_dump(mode="json"))


def is_secret_key(key: str) -> bool:
    """Whether a key names a secret: a word of it ends in key/token/secret/password.

    Whole words, not substrings, so ``keyword_index`` and ``max_tokens`` stay visible while
    ``api_key``, ``apikey``, ``access-token`` and ``DB_PASSWORD`` are hidden.
    """
    words = key.lower().replace("-", "_").replace(".", "_").split("_")
    return any(word.endswith(SECRET_WORDS) for word in words)


def _redact(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: "***" if is_secret_key(str(k)) and v is not None else _redact(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_redact(v) for v in value]
    return value
