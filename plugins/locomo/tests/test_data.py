"""Reading LoCoMo and REALTALK as upstream ships them, evidence ids normalised."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from conftest import LOCOMO, REALTALK
from reme_locomo.data import DataError, load_conversations, normalise_evidence, parse_when


def test_evidence_ids_are_normalised() -> None:
    assert normalise_evidence(["D1:3", "D:3:12", "D8:6; D9:17", "D13:4. D14:4", "D1:3"]) == [
        "D1:3", "D3:12", "D8:6", "D9:17", "D13:4", "D14:4",
    ]  # fmt: skip
    assert normalise_evidence("D02:07") == ["D2:7"]
    assert normalise_evidence([["D1:1"], "nothing"]) == ["D1:1"]


def test_upstream_dates_are_read() -> None:
    assert parse_when("1:56 pm on 8 May, 2023") == dt.datetime(2023, 5, 8, 13, 56)
    assert parse_when("29.12.2023, 22:42:04") == dt.datetime(2023, 12, 29, 22, 42, 4)
    assert parse_when("some day") is None


def test_locomo_samples_become_conversations() -> None:
    (conv,) = load_conversations(LOCOMO)
    assert conv.id == "conv-t1" and conv.format == "locomo"
    assert [t.dia_id for t in conv.turns] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2", "D2:3"]
    assert conv.turns[2].caption == "a photo of a red kayak on a lake"
    assert conv.turns[3].when == dt.datetime(2023, 6, 9, 19, 55)
    q = {x.qid: x for x in conv.questions}
    assert q["conv-t1/q2"].evidence == ["D1:2", "D2:1"] and q["conv-t1/q2"].category == "multi-hop"
    assert q["conv-t1/q3"].evidence == ["D1:3"]
    assert q["conv-t1/q4"].category == "adversarial"
    assert q["conv-t1/q5"].evidence == []


def test_a_realtalk_folder_keeps_turn_times_and_sets_aside_missing_evidence() -> None:
    (conv,) = load_conversations(REALTALK)
    assert conv.id == "Chat_9_Cleo_Dan" and conv.format == "realtalk"
    assert conv.turns[1].when == dt.datetime(2023, 12, 30, 0, 32, 20)  # its own, not its session's
    q = {x.qid: x for x in conv.questions}
    assert q["Chat_9_Cleo_Dan/q1"].evidence == ["D1:1", "D2:1"]
    # Upstream dropped D1:3 when it cleaned the chat but kept the id in the evidence.
    assert q["Chat_9_Cleo_Dan/q2"].evidence == ["D2:2"]
    assert q["Chat_9_Cleo_Dan/q2"].missing_evidence == ["D1:3"]
    assert q["Chat_9_Cleo_Dan/q2"].category == "temporal"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ({"hello": 1}, "neither LoCoMo"),
        ([{"qa": []}], "no `conversation` object"),
        ([{"conversation": {"session_1": [{"speaker": "A", "text": "hi"}]}, "qa": []}], "dia_id"),
        ([{"conversation": {"session_1": []}}], "no `qa` list"),
    ],
)
def test_malformed_files_are_refused(tmp_path: Path, content: object, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(content))
    with pytest.raises(DataError, match=message):
        load_conversations(path)


def test_a_folder_without_json_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"no \.json files"):
        load_conversations(tmp_path)
