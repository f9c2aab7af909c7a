"""Fixture helpers for benchmark plugins' tests, by the name they have always been imported as.

They live in the conformance kit, ``reme_core.testing.bench``, since they wire the CLI and the
framework here sits below it; this module only re-exports them.
"""

from __future__ import annotations

from reme_core.testing.bench import (
    bench_cli,
    build_test_plugins,
    isolated_environment,
    share_plugins,
    shipped_plugin_modules,
)

__all__ = [
    "bench_cli",
    "build_test_plugins",
    "isolated_environment",
    "share_plugins",
    "shipped_plugin_modules",
]
