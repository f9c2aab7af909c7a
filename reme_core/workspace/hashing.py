"""Content hashes: the identity of a file's bytes, used for conflicts and change detection."""

from __future__ import annotations

import hashlib


def content_hash(data: bytes | str) -> str:
    """sha256 hex digest of the bytes (text is hashed as UTF-8)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()
