"""reme as the memory provider of Hermes Agent: ``provider.RemeMemoryProvider`` (inside Hermes),
``memory.RemeMemory`` (the logic), ``install`` (the ``reme-hermes`` command)."""

__version__ = "0.1.0"
