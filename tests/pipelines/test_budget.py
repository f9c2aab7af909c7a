"""Token budgets shared by the pipelines: prefixes, character cuts, greedy groups, shown heads."""

from __future__ import annotations

import pytest

from reme_core.components import estimate_tokens
from reme_core.pipelines.budget import batches, cut, fit, head_lines, joined_tokens

CJK = "\u4e2d\u6587"


def test_fit_is_the_longest_prefix_within_the_budget() -> None:
    assert fit("short", 10) == "short"
    assert fit("a" * 100, 10) == "a" * 40
    assert fit("\u4e2d" * 50, 10) == "\u4e2d" * 10
    mixed = "ab" + CJK * 20
    head = fit(mixed, 7)
    assert estimate_tokens(head) <= 7 < estimate_tokens(mixed[: len(head) + 1])
    assert fit("abc", 0) == "a"  # never empty: a cut always makes progress


def test_cut_makes_consecutive_pieces_within_the_budget() -> None:
    text = "x" * 90 + CJK * 30
    pieces = cut(text, 10)
    assert "".join(pieces) == text
    assert all(estimate_tokens(p) <= 10 for p in pieces)
    assert all(estimate_tokens(p) == 10 for p in pieces[:-1])  # each the longest that fits
    assert cut("fits", 10) == ["fits"] and cut("", 10) == [""]
    with pytest.raises(ValueError, match="positive"):
        cut("x", 0)


def test_batches_pack_greedily_in_order_with_separators() -> None:
    items = ["a" * 8, "b" * 8, "c" * 8, "d" * 30, "e" * 4]  # 2, 2, 2, 8, 1 tokens
    assert list(batches(items, 6, estimate_tokens)) == [items[:3], [items[3]], [items[4]]]
    # "\n\n" costs a token between each two items: two items and a separator fill 5.
    grouped = list(batches(items, 5, estimate_tokens, sep="\n\n"))
    assert grouped == [items[:2], [items[2]], [items[3]], [items[4]]]
    assert all(joined_tokens(map(estimate_tokens, g), "\n\n") <= 5 for g in grouped if len(g) > 1)
    assert list(batches(items, 100, estimate_tokens, max_items=2)) == [
        items[:2],
        items[2:4],
        items[4:],
    ]
    assert list(batches([], 10, estimate_tokens)) == []


def test_batches_price_only_the_items_they_reach() -> None:
    priced: list[int] = []

    def cost(item: int) -> int:
        priced.append(item)
        return 4

    first = next(batches(range(1000), 10, cost))
    assert first == [0, 1] and priced == [0, 1, 2]


def test_joined_tokens_bounds_the_joined_text() -> None:
    parts = ["a" * 5, CJK, "b" * 9]
    bound = joined_tokens((estimate_tokens(p) for p in parts), "\n\n")
    assert bound == 2 + 2 + 3 + 2 and estimate_tokens("\n\n".join(parts)) <= bound
    assert joined_tokens([], "\n\n") == 0 and joined_tokens([7]) == 7


def test_head_lines_keeps_whole_lines_and_says_what_is_left_out() -> None:
    text = "".join(f"line {i:02d} of the node\n" for i in range(1, 41))  # 5 tokens a line
    assert head_lines(text, 1000) == text
    shown = head_lines(text, 60)
    kept, marker = shown.rsplit("\n", 1)
    assert kept.splitlines() == text.splitlines()[:12]
    assert marker == "[... 28 more lines not shown]"
    assert estimate_tokens(kept) <= 60


def test_head_lines_cuts_a_first_line_longer_than_the_budget() -> None:
    shown = head_lines("x" * 400 + "\nsecond\n", 10)
    assert shown == "x" * 40 + "\n[... 2 more lines not shown]"
    assert head_lines("y" * 400, 10) == "y" * 40 + "\n[... 1 more line not shown]"
