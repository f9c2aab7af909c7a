"""LLM spend as the results record it: calls, tokens and answers served from the disk cache."""

from __future__ import annotations

from collections.abc import Iterable

from reme_core.api import Llm

USAGE_KEYS = ("calls", "prompt_tokens", "completion_tokens", "cache_hits")


def snapshot(models: Iterable[Llm | None]) -> dict[str, int]:
    """The counters of ``models`` added up (a model listed twice counts once)."""
    total = dict.fromkeys(USAGE_KEYS, 0)
    for llm in {id(m): m for m in models if m is not None}.values():
        total["calls"] += llm.usage.calls
        total["prompt_tokens"] += llm.usage.prompt_tokens
        total["completion_tokens"] += llm.usage.completion_tokens
        # Only the `cached` llm has this counter; its usage counts real calls alone.
        total["cache_hits"] += int(getattr(llm, "cache_hits", 0))
    return total


def spent(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {key: after.get(key, 0) - before.get(key, 0) for key in USAGE_KEYS}


def add(total: dict[str, int], more: dict[str, int]) -> dict[str, int]:
    return {key: total.get(key, 0) + more.get(key, 0) for key in USAGE_KEYS}
