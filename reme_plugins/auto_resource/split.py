"""Cutting text into parts under a token budget, at the largest natural boundary that fits.

Budgets use ``estimate_tokens``, the same estimate the models' usage accounting uses. It is
subadditive (the estimate of ``a + b`` is at most the estimates of ``a`` and ``b`` added), so a
part built by adding pieces' estimates never exceeds the budget, without re-measuring it.
"""

from __future__ import annotations

from collections.abc import Sequence

from reme_core.components import estimate_tokens

SEPARATOR = "\n\n"


def fit(text: str, budget: int) -> str:
    """The longest prefix of ``text`` whose estimate is within ``budget`` (at least 1 token)."""
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


def split_text(text: str, budget: int) -> list[str]:
    """Pieces of ``text``, each within ``budget``: whole lines where possible, else characters."""
    if estimate_tokens(text) <= budget:
        return [text]
    pieces: list[str] = []
    for line in text.splitlines(keepends=True):
        while estimate_tokens(line) > budget:
            head = fit(line, budget)
            pieces.append(head)
            line = line[len(head) :]
        if line:
            pieces.append(line)
    return _pack(pieces, budget, sep="")


def pack(sections: Sequence[str], budget: int) -> list[str]:
    """Join ``sections`` in order into as few parts as fit ``budget``, cutting oversized ones."""
    if budget < 1:
        raise ValueError(f"token budget must be positive, got {budget}")
    pieces: list[str] = []
    for section in sections:
        pieces += split_text(section, budget)
    return _pack(pieces, budget, sep=SEPARATOR)


def _pack(pieces: Sequence[str], budget: int, sep: str) -> list[str]:
    sep_tokens = estimate_tokens(sep)
    parts: list[str] = []
    current: list[str] = []
    used = 0
    for piece in pieces:
        cost = estimate_tokens(piece)
        if current and used + sep_tokens + cost > budget:
            parts.append(sep.join(current))
            current, used = [], 0
        used += cost + (sep_tokens if current else 0)
        current.append(piece)
    if current:
        parts.append(sep.join(current))
    return [p for p in parts if p.strip()]
