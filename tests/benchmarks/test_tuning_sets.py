"""The fusion tuning sets: conversations as turn notes, and facts planted away from their subject."""

from __future__ import annotations

import json
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import conversations  # noqa: E402
import synthetic_entities  # noqa: E402


def test_evidence_ids_are_normalised() -> None:
    found = conversations.normalise_evidence(["D3:12", "D:4:1", "D5:2; D5:3", "nonsense"])
    assert found == {"D3:12", "D4:1", "D5:2", "D5:3"}


def test_a_locomo_chat_becomes_one_dated_note_per_turn_without_its_ids(tmp_path: Path) -> None:
    sample = {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a cat."},
                {"speaker": "Ben", "dia_id": "D1:2", "text": "Lovely!", "blip_caption": "a cat"},
            ],
        },
        "qa": [
            {"question": "What did Ana adopt?", "evidence": ["D1:1"], "category": 4},
            {"question": "No evidence", "evidence": [], "category": 5},
        ],
    }
    data = tmp_path / "locomo.json"
    data.write_text(json.dumps([sample]), "utf-8")
    (chat,) = conversations.locomo(data)
    assert [q.question for q in chat.questions] == ["What did Ana adopt?"]
    owners = conversations.write_turns(chat, tmp_path / "ws", context=True)
    assert sorted(owners.values()) == ["D1:1", "D1:2"]
    notes = sorted((tmp_path / "ws" / "daily" / "2023-05-08").glob("*.md"))
    texts = [n.read_text("utf-8") for n in notes]
    assert all("date: 2023-05-08" in t and "D1:" not in t for t in texts)
    reply = next(t for t in texts if "Ben:" in t)
    assert "> Ana: I adopted a cat." in reply and "[shares a photo: a cat]" in reply
    assert 'replying_to: "Ana: I adopted a cat."' in reply  # the vector arm's context key
    first = next(t for t in texts if "Ben:" not in t)
    assert "replying_to" not in first  # the first turn of its day answers nothing


def test_entity_facts_sit_outside_their_subjects_profile(tmp_path: Path) -> None:
    facts = synthetic_entities.generate(tmp_path / "a", 300, seed=1)
    assert len(facts) >= 10
    for fact in facts:
        note = (tmp_path / "a" / fact.answer_path).read_text("utf-8")
        assert fact.answer_text in note
        assert not fact.answer_path.startswith("digest/people/")
        assert fact.paraphrase and fact.paraphrase != fact.query
    profiles = [p.read_text("utf-8") for p in (tmp_path / "a" / "digest" / "people").glob("*.md")]
    assert not any(f.answer_text in text for f in facts for text in profiles)
    synthetic_entities.generate(tmp_path / "b", 300, seed=1)
    first = {p.relative_to(tmp_path / "a"): p.read_bytes() for p in (tmp_path / "a").rglob("*.md")}
    second = {p.relative_to(tmp_path / "b"): p.read_bytes() for p in (tmp_path / "b").rglob("*.md")}
    assert first == second
