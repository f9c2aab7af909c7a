"""The C allocator's own calls where it is glibc's (``malloc_trim``, ``mallopt``); nothing elsewhere.

Python and onnxruntime free memory that glibc keeps for reuse; the keyword build and the
embedders hand it back to the system after their large passes. One lookup serves both.
"""

from __future__ import annotations

import functools
from typing import Any


@functools.cache
def libc_function(name: str) -> Any:
    """glibc's function ``name``, or None where there is none (musl, macOS, Windows)."""
    import ctypes

    try:
        return getattr(ctypes.CDLL(None), name)
    except (AttributeError, OSError, TypeError):  # TypeError: Windows has no CDLL(None)
        return None


def release_freed_memory() -> None:
    """Hand memory that is free but still held by the C allocator back to the system
    (``malloc_trim(0)``); elsewhere nothing."""
    trim = libc_function("malloc_trim")
    if trim is not None:
        trim(0)
