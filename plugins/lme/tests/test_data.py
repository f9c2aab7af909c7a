"""Loaders on tiny files in the upstream formats, and what a run ingests of an item."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from reme_lme.data import load_items, parse_date
from reme_lme.evidence import evidence

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def test_json_and_json_gz_load_the_same(data: Path) -> None:
    plain = load_items(FIXTURES / "longmemeval_s_tiny.json")
    assert [i.question_id for i in plain] == ["q_dog", "q_trips", "q_cat_abs"]
    assert load_items(data) == plain


def test_oracle_integer_answers_become_text() -> None:
    (item,) = load_items(FIXTURES / "longmemeval_oracle_tiny.json")
    assert item.answer == "43" and item.question_type == "temporal-reasoning"


def test_parse_date() -> None:
    assert parse_date("2023/05/30 (Tue) 23:40") == dt.datetime(2023, 5, 30, 23, 40)
    assert parse_date("2023/05/30") == dt.datetime(2023, 5, 30)
    with pytest.raises(ValueError):
        parse_date("May 30")


def test_sessions_in_time_order_with_those_after_the_question() -> None:
    item = load_items(FIXTURES / "longmemeval_s_tiny.json")[0]
    sessions, later = item.sessions()
    # late_3 is dated 2023/06/10, after the question: counted, and kept as upstream keeps it.
    assert [s.id for s in sessions] == ["hike_1", "pasta_2", "answer_dog_1", "late_3"]
    assert later == 1


def test_evidence_follows_the_official_rules() -> None:
    dog, trips, cat = load_items(FIXTURES / "longmemeval_s_tiny.json")
    found = evidence(dog, dog.sessions()[0])
    assert found.sessions == ["answer_dog_1"]
    assert found.turns == ["answer_dog_1_3"]  # the third turn, counting assistant turns
    assert found.turn_corpus == [
        "hike_1_1",
        "pasta_2_1",
        "answer_dog_1_1",
        "answer_dog_1_3",
        "late_3_1",
    ]
    assert found.skip is None
    trips_found = evidence(trips, trips.sessions()[0])
    assert trips_found.sessions == ["answer_trip_1", "answer_trip_3"]
    assert trips_found.turns == ["answer_trip_1_1", "answer_trip_3_3"]
    assert evidence(cat, cat.sessions()[0]).skip == "abstention"


def test_evidence_without_a_user_answer_turn_is_skipped() -> None:
    dog = load_items(FIXTURES / "longmemeval_s_tiny.json")[0]
    for session in dog.haystack_sessions:
        for turn in session:
            turn.has_answer = turn.role == "assistant" and "dig" in turn.content
    assert evidence(dog, dog.sessions()[0]).skip == "no user evidence"


def test_items_without_labels_score_sessions_only() -> None:
    dog = load_items(FIXTURES / "longmemeval_s_tiny.json")[0]
    for session in dog.haystack_sessions:
        for turn in session:
            turn.has_answer = False
    found = evidence(dog, dog.sessions()[0])
    assert found.sessions == ["answer_dog_1"] and found.turns == [] and found.skip is None
