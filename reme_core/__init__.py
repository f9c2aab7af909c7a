"""reme: local-first memory for AI agents. The framework; backends live in plugins."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reme_core.hookspecs import hookimpl

__version__ = "0.1.0"
__all__ = ["__version__", "hookimpl"]


def __getattr__(name: str) -> Any:
    # ``hookimpl`` is what plugins import; pluggy loads with it, so `reme --version` and
    # `reme --help`, which need no plugin, do not pay for it.
    if name == "hookimpl":
        from reme_core.hookspecs import hookimpl

        return hookimpl
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
