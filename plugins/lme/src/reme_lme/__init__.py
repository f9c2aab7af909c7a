"""LongMemEval for reme: loaders, per-item workspaces, retrieval and QA metrics, the
``search_v2`` and ``auto_memory_lme`` steps and the ``reme bench lme`` commands."""

__version__ = "0.1.0"
