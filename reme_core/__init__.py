"""reme: local-first memory for AI agents. The framework; backends live in plugins."""

from reme_core.hookspecs import hookimpl

__version__ = "0.1.0"
__all__ = ["__version__", "hookimpl"]
