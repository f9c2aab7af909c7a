"""How ``reme bench reproduce`` learns the manifest a benchmark command would record.

A benchmark's run command builds its manifest first and then calls ``checkpoint(manifest)``
before doing any work. Normally that returns at once. Inside ``capture_manifest()`` (which
``reme bench reproduce`` uses while it invokes the recorded command in-process) it raises
``ManifestCaptured`` instead, so the command stops there and the caller gets the manifest it
would have recorded, built by the same code path, with the plugins and config files installed
now.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from reme_core.bench.manifest import Manifest

_capturing: ContextVar[bool] = ContextVar("reme_bench_capturing", default=False)


class ManifestCaptured(BaseException):
    """Raised by ``checkpoint`` while capturing; carries the manifest. A BaseException so that
    a command's ``except Exception`` does not swallow it."""

    def __init__(self, manifest: Manifest):
        super().__init__("manifest captured")
        self.manifest = manifest


def checkpoint(manifest: Manifest) -> None:
    """Call once in a benchmark run command, after building the manifest, before any work."""
    if _capturing.get():
        raise ManifestCaptured(manifest)


@contextmanager
def capture_manifest() -> Iterator[None]:
    """Within this block, ``checkpoint`` stops the command by raising ``ManifestCaptured``."""
    token = _capturing.set(True)
    try:
        yield
    finally:
        _capturing.reset(token)
