"""Reviewers of the proposals the core itself makes (no step names them)."""

from __future__ import annotations

from reme_core.review.reviewer import Reviewer

MEMORY_PIPELINE = "memory_summarize"
"""The ``pipeline`` of memory summarize's proposals (verb MEMORY)."""


def builtin_reviewer(pipeline: str) -> Reviewer | None:
    if pipeline == MEMORY_PIPELINE:
        from reme_core.memory.review import MemoryReviewer

        return MemoryReviewer()
    return None
