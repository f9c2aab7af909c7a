"""Packing text under a token budget, shared by the pipelines that build prompts.

Budgets use ``estimate_tokens``, the same estimate the models' usage accounting uses. It grows by
at most one token per character, and it is subadditive (the estimate of ``a + b`` is at most the
estimates of ``a`` and ``b`` added), so a group built by adding its items' estimates never goes
over the budget once joined, without measuring the joined text again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from reme_core.components import estimate_tokens

T = TypeVar("T")


def fit(text: str, budget: int) -> str:
    """The longest prefix of ``text`` whose estimate is within ``budget`` (at least 1 character)."""
    if estimate_tokens(text) <= budget:
        return text
    # A token is never less than one character, so no prefix longer than 4 * budget fits.
    low, high = 0, min(len(text), 4 * max(budget, 1))
    while low < high:
        mid = (low + high + 1) // 2
        if estimate_tokens(text[:mid]) <= budget:
            low = mid
        else:
            high = mid - 1
    return text[: max(low, 1)]


def cut(text: str, budget: int) -> list[str]:
    """``text`` cut by characters into consecutive pieces within ``budget``: each piece but the
    last is the longest that fits (``[text]`` when it fits whole)."""
    if budget < 1:
        raise ValueError(f"token budget must be positive, got {budget}")
    pieces: list[str] = []
    while estimate_tokens(text) > budget:
        head = fit(text, budget)
        pieces.append(head)
        text = text[len(head) :]
    if text or not pieces:
        pieces.append(text)
    return pieces


def joined_tokens(costs: Iterable[int], sep: str = "") -> int:
    """The bound ``batches`` packs under: the items' costs plus one ``sep`` between each two."""
    counted = list(costs)
    return sum(counted) + estimate_tokens(sep) * max(len(counted) - 1, 0)


def batches(
    items: Iterable[T],
    budget: int,
    cost: Callable[[T], int],
    *,
    sep: str = "",
    max_items: int | None = None,
) -> Iterator[list[T]]:
    """``items`` in order, in as few consecutive groups as fit: greedily, each group's costs plus
    one ``sep`` (the text the group will be joined with) between each two stay within ``budget``.

    An item costing more than the budget gets a group of its own (never an empty group), and with
    ``max_items`` no group is longer. Lazy: ``cost`` is called only for the items reached, so the
    first group of a long sequence is cheap (``next(batches(...))``).
    """
    sep_tokens = estimate_tokens(sep)
    current: list[T] = []
    used = 0
    for item in items:
        price = cost(item)
        full = max_items is not None and len(current) >= max_items
        if current and (full or used + sep_tokens + price > budget):
            yield current
            current, used = [], 0
        used += price + (sep_tokens if current else 0)
        current.append(item)
    if current:
        yield current


def head_lines(text: str, budget: int) -> str:
    """``text`` if it fits ``budget``; else its leading whole lines that fit (a first line too
    long cut by characters) and a last line saying how many lines are not shown in full.

    The marker line is not counted in the budget.
    """
    if estimate_tokens(text) <= budget:
        return text
    lines = text.splitlines(keepends=True)
    kept = next(batches(lines, budget, estimate_tokens))
    head = "".join(kept)
    if estimate_tokens(head) > budget:  # one line over the whole budget: show its start
        head, kept = fit(head, budget), []
    hidden = len(lines) - len(kept)
    plural = "" if hidden == 1 else "s"
    return f"{head.rstrip()}\n[... {hidden} more line{plural} not shown]"
