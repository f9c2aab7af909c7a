"""Evidence recall@k / any@k and the per-ability means, against values worked out by hand."""

from __future__ import annotations

import math

import pytest
from reme_beam.metrics import (
    by_ability,
    evidence_any_at_k,
    evidence_recall_at_k,
    recall_within_messages,
    retrieval_metrics,
)

# Hits in rank order, each with the message ids it shows (a chunk may show several, or none).
HITS = [frozenset({"9"}), frozenset(), frozenset({"2", "3"}), frozenset({"7"}), frozenset({"3"})]


def test_recall_counts_evidence_shown_by_the_first_k_hits() -> None:
    evidence = ["3", "7", "40"]
    assert evidence_recall_at_k(HITS, evidence, 1) == 0.0
    assert evidence_recall_at_k(HITS, evidence, 3) == pytest.approx(1 / 3)
    assert evidence_recall_at_k(HITS, evidence, 4) == pytest.approx(2 / 3)
    assert evidence_recall_at_k(HITS, evidence, 50) == pytest.approx(2 / 3)  # 40 never shown
    assert evidence_any_at_k(HITS, evidence, 2) == 0.0
    assert evidence_any_at_k(HITS, evidence, 3) == 1.0


def test_recall_within_a_message_budget_stops_before_the_hit_that_exceeds_it() -> None:
    evidence = ["3", "7"]
    # shown after each hit: {9}, {9}, {9,2,3}, {9,2,3,7}, {9,2,3,7}
    assert recall_within_messages(HITS, evidence, 1) == 0.0
    assert recall_within_messages(HITS, evidence, 3) == 0.5
    assert recall_within_messages(HITS, evidence, 4) == 1.0
    wide = [frozenset({"a", "b", "c", "3"}), frozenset({"7"})]
    assert recall_within_messages(wide, evidence, 3) == 0.0  # the first hit alone is too wide
    assert retrieval_metrics(HITS, evidence, ks=(), budgets=(3,)) == {"recall@3msg": 0.5}


def test_no_evidence_gives_no_figure() -> None:
    assert math.isnan(evidence_recall_at_k(HITS, [], 5))
    assert math.isnan(evidence_any_at_k(HITS, [], 5))
    assert retrieval_metrics(HITS, []) == {}


def test_retrieval_metrics_names_each_cut_off() -> None:
    assert retrieval_metrics(HITS, ["2", "9"], ks=(1, 3), budgets=()) == {
        "recall@1": 0.5,
        "any@1": 1.0,
        "shown@1": 1.0,
        "recall@3": 1.0,
        "any@3": 1.0,
        "shown@3": 3.0,
    }


def test_overall_weighs_questions_and_macro_weighs_abilities() -> None:
    rows = [
        {"ability": "a", "metrics": {"recall@5": 1.0}},
        {"ability": "a", "metrics": {"recall@5": 1.0}},
        {"ability": "a", "metrics": {"recall@5": 1.0}},
        {"ability": "b", "metrics": {"recall@5": 0.0}},
        {"ability": "c", "metrics": {}},  # abstention-like: counted, no figure
    ]
    table = by_ability(rows)
    assert table["a"]["recall@5"] == 1.0 and table["a"]["questions"] == 3
    assert table["c"] == {"questions": 1.0}
    assert table["overall"]["recall@5"] == pytest.approx(0.75)
    assert table["macro"]["recall@5"] == pytest.approx(0.5)
    assert table["overall"]["n:recall@5"] == 4
