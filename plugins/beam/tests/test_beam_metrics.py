"""Recall at k messages shown, and the per-ability means, against values worked out by hand."""

from __future__ import annotations

import math

import pytest
from reme_beam.metrics import (
    by_ability,
    hits_within,
    messages_shown,
    read_within,
    recall_within_messages,
    retrieval_metrics,
)

# Hits in rank order, each with the message ids it shows (a chunk may show several, or none).
HITS = [("9",), (), ("2", "3"), ("7",), ("3",)]


def test_recall_within_a_message_budget_reads_the_first_k_messages_in_reading_order() -> None:
    evidence = ["3", "7"]
    # messages in reading order: 9, 2, 3, 7 (the last hit repeats 3)
    assert recall_within_messages(HITS, evidence, 1) == 0.0
    assert recall_within_messages(HITS, evidence, 2) == 0.0  # hit 3 read as far as "2"
    assert recall_within_messages(HITS, evidence, 3) == 0.5
    assert recall_within_messages(HITS, evidence, 4) == 1.0
    assert read_within(HITS, 2) == (3, ["9", "2"])  # the empty hit is read; hit 3 in part
    wide = [("a", "b", "c", "3"), ("7",)]
    # A hit wider than the budget is read as far as it fits: its first messages, in line order.
    assert read_within(wide, 3) == (1, ["a", "b", "c"])
    assert recall_within_messages(wide, evidence, 3) == 0.0
    assert recall_within_messages(wide, evidence, 4) == 0.5
    assert hits_within(wide, 3) == 1 and hits_within(wide, 4) == 1 and hits_within(wide, 5) == 2
    assert read_within(wide, 0) == (0, [])


def test_hits_showing_the_same_message_count_it_once() -> None:
    # Two chunks of one long message, then the overlap of two chunks: five hits, three messages.
    dup = [("1",), ("1",), ("2",), ("2", "3"), ("3",)]
    assert messages_shown(dup) == {"1", "2", "3"}
    assert hits_within(dup, 3) == 5  # the repeats cost nothing: every hit fits in 3 messages
    assert hits_within(dup, 2) == 3
    assert retrieval_metrics(dup, ["3"], ks=(2, 3)) == {
        "recall@2msg": 0.0,
        "any@2msg": 0.0,
        "shown@2msg": 2.0,
        "hits@2msg": 3.0,
        "recall@3msg": 1.0,
        "any@3msg": 1.0,
        "shown@3msg": 3.0,
        "hits@3msg": 5.0,
    }


def test_no_evidence_gives_no_figure() -> None:
    assert math.isnan(recall_within_messages(HITS, [], 5))
    assert retrieval_metrics(HITS, []) == {}


def test_budgets_come_from_ks_and_a_short_list_shows_what_it_has() -> None:
    got = retrieval_metrics(HITS, ["2", "9"], ks=(1, 50))
    assert set(got) == {f"{m}@{k}msg" for m in ("recall", "any", "shown", "hits") for k in (1, 50)}
    assert got["recall@1msg"] == 0.5 and got["hits@1msg"] == 2.0  # the empty hit is read too
    assert got["recall@50msg"] == 1.0
    assert got["shown@50msg"] == 4.0 and got["hits@50msg"] == 5.0  # out of hits before 50


def test_overall_weighs_questions_and_macro_weighs_abilities() -> None:
    rows = [
        {"ability": "a", "metrics": {"recall@5msg": 1.0}},
        {"ability": "a", "metrics": {"recall@5msg": 1.0}},
        {"ability": "a", "metrics": {"recall@5msg": 1.0}},
        {"ability": "b", "metrics": {"recall@5msg": 0.0}},
        {"ability": "c", "metrics": {}},  # abstention-like: counted, no figure
    ]
    table = by_ability(rows)
    assert table["a"]["recall@5msg"] == 1.0 and table["a"]["questions"] == 3
    assert table["c"] == {"questions": 1.0}
    assert table["overall"]["recall@5msg"] == pytest.approx(0.75)
    assert table["macro"]["recall@5msg"] == pytest.approx(0.5)
    assert table["overall"]["n:recall@5msg"] == 4
