"""Metric functions against values computed by hand."""

from __future__ import annotations

import math

import pytest

from reme_core.bench import (
    dcg,
    dedupe,
    evidence_recall,
    ndcg_any,
    recall_all,
    recall_any,
    retrieval_metrics,
)


def test_dedupe_keeps_first_occurrences() -> None:
    assert dedupe(["a", "b", "a", "c", "b"]) == ["a", "b", "c"]


def test_dcg_weighs_ranks_one_and_two_alike_as_upstream() -> None:
    # 1 + 1/log2(2) + 0 + 1/log2(4) = 1 + 1 + 0.5
    assert dcg([1, 1, 0, 1], 4) == pytest.approx(2.5)
    assert dcg([1, 1, 0, 1], 2) == pytest.approx(2.0)
    assert dcg([], 5) == 0.0


def test_recall_any_and_all() -> None:
    ranked = ["s3", "s1", "s7", "s2"]
    assert recall_any(ranked, {"s2", "s9"}, 3) == 0.0
    assert recall_any(ranked, {"s2", "s9"}, 4) == 1.0
    assert recall_all(ranked, {"s1", "s2"}, 3) == 0.0
    assert recall_all(ranked, {"s1", "s2"}, 4) == 1.0
    assert recall_any(ranked, set(), 4) == 0.0


def test_ndcg_any_by_hand() -> None:
    corpus = ["s1", "s2", "s3", "s4", "s5"]
    # correct s2, s4; ranked s4 at 1, s2 at 3: dcg = 1 + 1/log2(3); ideal = 1 + 1/log2(2) = 2
    value = ndcg_any(["s4", "s1", "s2"], {"s2", "s4"}, corpus, 3)
    assert value == pytest.approx((1 + 1 / math.log2(3)) / 2)
    # k = 1: only the top counts; ideal 1, actual 1
    assert ndcg_any(["s4", "s1", "s2"], {"s2", "s4"}, corpus, 1) == 1.0
    # no correct doc in the corpus: 0, never a division by zero
    assert ndcg_any(["s1"], {"x"}, corpus, 5) == 0.0


def test_retrieval_metrics_names_every_k_with_the_prefix() -> None:
    out = retrieval_metrics(["b", "a"], ["a"], ["a", "b", "c"], ks=(1, 3), prefix="turn_")
    assert out == {
        "turn_recall_any@1": 0.0,
        "turn_recall_all@1": 0.0,
        "turn_ndcg_any@1": 0.0,
        "turn_recall_any@3": 1.0,
        "turn_recall_all@3": 1.0,
        "turn_ndcg_any@3": pytest.approx(1.0),  # rank 2 weighs like rank 1 upstream
    }


def test_evidence_recall_is_a_fraction_and_nan_without_evidence() -> None:
    assert evidence_recall([1, 2, 3, 4], [2, 4, 9], 2) == pytest.approx(1 / 3)
    assert evidence_recall([1, 2, 3, 4], [2, 4, 9], 4) == pytest.approx(2 / 3)
    assert math.isnan(evidence_recall([1, 2], [], 2))
