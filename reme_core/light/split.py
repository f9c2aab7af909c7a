"""``check_context``: when messages exceed a token threshold, where to cut them.

The cut keeps the most recent messages that fit in ``reserve`` tokens and hands the older ones
to compaction. It prefers the start of a user turn (a user message and everything up to the
next one); when the latest turn alone is over the reserve (a long tool loop), it may cut inside
that turn, but only between tool-call rounds: never between a user message and the reply to
it, and never between a tool call and its result. Leading system messages are never compacted
and do not count against the reserve.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reme_core.light.messages import ContextError, cut_points, leading_system, validate_messages
from reme_core.light.tokens import TokenCounter


@dataclass(frozen=True)
class ContextSplit:
    """The answer of ``check_context``; unpacks as ``(to_compact, to_keep, is_valid)``."""

    to_compact: list[dict[str, Any]]
    to_keep: list[dict[str, Any]]
    is_valid: bool
    total_tokens: int = 0
    keep_tokens: int = 0
    reason: str = ""
    """Why nothing could be cut, when ``is_valid`` is false."""
    sizes: list[int] = field(default_factory=list, repr=False)
    """Tokens of each input message, in order."""

    def __iter__(self) -> Iterator[Any]:
        return iter((self.to_compact, self.to_keep, self.is_valid))

    @property
    def needed(self) -> bool:
        """Whether the messages were over the threshold."""
        return bool(self.to_compact) or not self.is_valid


def check_context(
    messages: Sequence[Mapping[str, Any]],
    threshold: int,
    reserve: int,
    counter: TokenCounter,
) -> ContextSplit:
    """Split ``messages`` into (to_compact, to_keep, is_valid) against a token ``threshold``.

    Under the threshold nothing is compacted. Over it, ``to_keep`` holds the leading system
    messages and the latest messages that fit in ``reserve`` tokens (capped at ``threshold``),
    cut at the earliest allowed place. ``is_valid`` is false, and nothing is compacted, when no
    allowed cut keeps the latest turn within the reserve (a single huge message, say).
    """
    if threshold <= 0:
        raise ContextError(f"threshold must be a positive number of tokens, got {threshold}")
    if reserve < 0:
        raise ContextError(f"reserve must be 0 or more tokens, got {reserve}")
    msgs = validate_messages(messages)
    sizes = [counter.message(m) for m in msgs]
    total = sum(sizes)
    if total <= threshold:
        return ContextSplit([], msgs, True, total, total, sizes=sizes)

    pinned = leading_system(msgs)
    body = msgs[pinned:]
    body_sizes = sizes[pinned:]
    budget = min(reserve, threshold)
    cut = _choose_cut(body, body_sizes, budget)
    if cut is None:
        latest = _latest_unit_tokens(body, body_sizes)
        return ContextSplit(
            [],
            msgs,
            False,
            total,
            total,
            reason=(
                f"no cut keeps the latest messages within the reserve: the smallest part that "
                f"can be kept whole is {latest} tokens, over the {budget}-token reserve"
                if body
                else "only system messages, which are never compacted"
            ),
            sizes=sizes,
        )
    keep = msgs[:pinned] + body[cut:]
    return ContextSplit(
        body[:cut], keep, True, total, sum(sizes[:pinned]) + sum(body_sizes[cut:]), sizes=sizes
    )


def _choose_cut(body: list[dict[str, Any]], sizes: list[int], budget: int) -> int | None:
    """The earliest allowed cut whose kept suffix fits ``budget``; user-turn starts first."""
    suffix = [0] * (len(body) + 1)
    for index in range(len(body) - 1, -1, -1):
        suffix[index] = suffix[index + 1] + sizes[index]
    fits = [i for i in _allowed_cuts(body) if suffix[i] <= budget]
    turn_starts = [i for i in fits if body[i].get("role") == "user"]
    if turn_starts:
        return turn_starts[0]
    return fits[0] if fits else None


def _allowed_cuts(body: list[dict[str, Any]]) -> list[int]:
    """Cut positions, in order: a user turn's start, or between two rounds of a tool loop
    (never right after the user message that the next message answers)."""
    ok = cut_points(body)
    return [
        i
        for i in range(1, len(body))
        if ok[i] and (body[i].get("role") == "user" or body[i - 1].get("role") != "user")
    ]


def _latest_unit_tokens(body: list[dict[str, Any]], sizes: list[int]) -> int:
    """Tokens of the smallest suffix an allowed cut could keep (the whole body if none)."""
    cuts = _allowed_cuts(body)
    return sum(sizes[cuts[-1] :]) if cuts else sum(sizes)
