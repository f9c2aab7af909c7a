"""BEAM's event-ordering score (alignment, F1, normalised Kendall tau-b) by hand."""

from __future__ import annotations

import math

import pytest
from reme_beam.ordering import align, answer_lines, ordering_score


def same(reference: str, line: str) -> bool:
    return reference.lower() in line.lower()


def test_a_perfect_order_scores_one() -> None:
    score = ordering_score(["a", "b", "c"], ["a", "b", "c"])
    assert (score.f1, score.tau_norm, score.final_score) == (1.0, 1.0, 1.0)


def test_one_swapped_pair() -> None:
    # ranks a,b,c: reference 1,2,3; answer 1,3,2 -> 2 concordant, 1 discordant: tau = 1/3
    score = ordering_score(["a", "b", "c"], ["a", "c", "b"])
    assert score.f1 == 1.0
    assert score.tau_norm == pytest.approx(2 / 3)
    assert score.final_score == pytest.approx(2 / 3)


def test_missing_and_extra_items_rank_last_with_ties() -> None:
    # union a,b,c,x; absent items rank 5. reference 1,2,3,5; answer 1,5,5,2.
    # pairs: C = ab, ac, ax; D = bx, cx; bc tied in the answer only.
    # tau_b = (3 - 2) / sqrt((3 + 2 + 0) * (3 + 2 + 1)) = 1 / sqrt(30)
    score = ordering_score(["a", "b", "c"], ["a", "x"])
    assert (score.precision, score.recall) == (0.5, pytest.approx(1 / 3))
    assert score.f1 == pytest.approx(0.4)
    assert score.tau_norm == pytest.approx((1 / math.sqrt(30) + 1) / 2)
    assert score.final_score == pytest.approx(0.4 * (1 / math.sqrt(30) + 1) / 2)


def test_a_single_item_has_no_order_to_score() -> None:
    assert math.isnan(ordering_score(["a"], ["a"]).final_score)


def test_answer_lines_align_to_the_first_unused_matching_reference() -> None:
    answer = "1) Core functionality first\n\n2) then Security\n3) Core functionality again\nlunch"
    lines = answer_lines(answer)
    assert len(lines) == 4  # the blank line is not an item
    aligned = align(["Core functionality", "Dashboard", "Security"], lines, same)
    assert aligned == ["Core functionality", "Security", lines[2], "lunch"]
    score = ordering_score(["Core functionality", "Dashboard", "Security"], aligned)
    assert score.precision == 0.5 and score.recall == pytest.approx(2 / 3)
