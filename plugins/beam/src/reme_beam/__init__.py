"""reme-beam: the BEAM long-term-memory benchmark for reme (``reme bench beam ...``)."""

__version__ = "0.1.0"
