"""Batches -> dated sessions in time order, with message times that keep the order."""

from __future__ import annotations

import datetime as dt

from beam_testing import TINY
from reme_beam.data import load_conversation
from reme_beam.sessions import build_sessions, parse_anchor


def test_anchor_spellings() -> None:
    assert parse_anchor("March-15-2024") == dt.date(2024, 3, 15)
    assert parse_anchor("Sep-01-2024") == dt.date(2024, 9, 1)
    assert parse_anchor("2024-05-02") == dt.date(2024, 5, 2)
    assert parse_anchor("sometime") is None and parse_anchor(None) is None


def test_one_session_per_batch_dated_by_the_first_message_anchor() -> None:
    sessions = build_sessions(load_conversation(TINY / "1"))
    assert [(s.id, s.date.isoformat()) for s in sessions] == [
        ("beam-b001", "2024-03-15"),
        ("beam-b002", "2024-04-05"),
    ]
    first = sessions[0].messages
    assert [m["id"] for m in first] == ["0", "1", "2", "3", "4", "5"]
    assert first[0]["content"].endswith("plan it?")  # marker stripped
    stamps = [m["timestamp"] for s in sessions for m in s.messages]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
    assert first[0]["timestamp"] == "2024-03-15T09:00:00"


def test_a_batch_without_anchor_is_the_next_day() -> None:
    sessions = build_sessions(load_conversation(TINY / "2"))
    # Batch 1 has a batch-level anchor; batch 2 none.
    assert [s.date.isoformat() for s in sessions] == ["2024-01-10", "2024-01-11"]


def test_turn_sessions_split_each_batch_by_turn_group() -> None:
    sessions = build_sessions(load_conversation(TINY / "1"), unit="turn")
    assert [s.id for s in sessions][:4] == [
        "beam-b001-t001",
        "beam-b001-t002",
        "beam-b001-t003",
        "beam-b002-t001",
    ]
    assert [m["id"] for m in sessions[1].messages] == ["2", "3"]
    assert {s.date.isoformat() for s in sessions[3:]} == {"2024-04-05"}
