"""reme-locomo: LoCoMo and REALTALK turn retrieval for reme (``reme bench locomo``)."""

__version__ = "0.1.0"
