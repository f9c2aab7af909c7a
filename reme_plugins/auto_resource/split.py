"""Cutting a resource's text into parts under a token budget, at the largest natural boundary
that fits: whole sections, else whole lines, else characters (see ``reme_core.pipelines.budget``
for how parts are measured)."""

from __future__ import annotations

from collections.abc import Sequence

from reme_core.api import batches, cut, estimate_tokens

SEPARATOR = "\n\n"


def split_text(text: str, budget: int) -> list[str]:
    """Pieces of ``text``, each within ``budget``: whole lines where possible, else characters."""
    if estimate_tokens(text) <= budget:
        return [text]
    pieces: list[str] = []
    for line in text.splitlines(keepends=True):
        pieces += cut(line, budget)
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
    parts = (sep.join(group) for group in batches(pieces, budget, estimate_tokens, sep=sep))
    return [p for p in parts if p.strip()]
