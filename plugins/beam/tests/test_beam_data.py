"""The loaders on tiny files in BEAM's upstream layout (chats/<size>/<n>/...)."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from beam_testing import TINY
from reme_beam.data import BeamDataError, discover, load_conversation, parse_batches


def test_a_conversation_reads_batches_messages_and_questions() -> None:
    conv = load_conversation(TINY / "1")
    assert conv.id == "1" and conv.chat_file.name == "chat.json"
    assert [b.batch_number for b in conv.batches] == [1, 2]
    messages = conv.messages()
    assert [m.key for m in messages] == [str(i) for i in range(12)]
    # The generator's position marker is not part of what the user said.
    assert messages[0].content.endswith("->-> 1,1")
    assert messages[0].text.endswith("Can you help me plan it?")
    abilities = [q.ability for q in conv.questions]
    assert abilities == [
        "abstention",
        "event_ordering",
        "information_extraction",
        "instruction_following",
        "knowledge_update",
    ]
    ku = conv.questions[4]
    assert ku.qid == "knowledge_update:0" and ku.evidence.ids == ("6", "8")
    assert ku.reference == "Around 250ms after caching."
    assert conv.questions[0].evidence.ids == ()


def test_gzipped_files_and_the_truncated_chat_are_read(tmp_path: Path) -> None:
    folder = tmp_path / "7"
    (folder / "probing_questions").mkdir(parents=True)
    for rel in ("chat.json", "probing_questions/probing_questions.json"):
        data = (TINY / "2" / rel).read_bytes()
        (folder / f"{rel}.gz").write_bytes(gzip.compress(data))
    conv = load_conversation(folder)
    assert conv.chat_file.name == "chat.json.gz" and len(conv.messages()) == 6
    # Upstream answers questions against chat_trunecated.json where it exists.
    short = json.loads((TINY / "2" / "chat.json").read_text())[:1]
    (folder / "chat_trunecated.json").write_text(json.dumps(short))
    conv = load_conversation(folder)
    assert conv.chat_file.name == "chat_trunecated.json" and len(conv.messages()) == 4


def test_discover_sorts_numbered_folders_by_number(tmp_path: Path) -> None:
    for name in ("10", "2", "1"):
        shutil.copytree(TINY / "1", tmp_path / name)
    (tmp_path / "notes").mkdir()  # not a conversation: ignored
    assert [p.name for p in discover(tmp_path)] == ["1", "2", "10"]
    assert discover(tmp_path / "2") == [tmp_path / "2"]  # one chat folder is its own item
    with pytest.raises(BeamDataError, match="no BEAM conversation"):
        discover(tmp_path / "notes")


def test_malformed_files_are_clear_errors(tmp_path: Path) -> None:
    folder = tmp_path / "1"
    folder.mkdir()
    (folder / "chat.json").write_text("[]")
    with pytest.raises(BeamDataError, match="probing_questions"):
        load_conversation(folder)
    (folder / "probing_questions").mkdir()
    (folder / "probing_questions" / "probing_questions.json").write_text("{}")
    with pytest.raises(BeamDataError, match="no batches"):
        load_conversation(folder)
    with pytest.raises(BeamDataError, match="no batches"):
        parse_batches([{"batch_number": 1}])
    with pytest.raises(BeamDataError, match=r"turns\.0\.0\.content"):
        parse_batches([{"turns": [[{"role": "user", "id": 1}]]}])
    (folder / "probing_questions" / "probing_questions.json").write_text("{not json")
    shutil.copy(TINY / "1" / "chat.json", folder / "chat.json")
    with pytest.raises(BeamDataError, match="not readable JSON"):
        load_conversation(folder)


def test_batches_grouped_deeper_are_found_in_order() -> None:
    grouped = {
        "plan-0": [{"turns": [[{"role": "user", "id": 0, "content": "a"}]]}],
        "plan-1": [{"turns": [[{"role": "user", "id": 1, "content": "b"}]]}],
    }
    assert [b.turns[0][0].key for b in parse_batches(grouped)] == ["0", "1"]
