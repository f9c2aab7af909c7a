"""One note per turn with speaker and date, and nothing the search could read an answer from."""

from __future__ import annotations

from pathlib import Path

from conftest import LOCOMO, REALTALK
from reme_locomo.baseline import TurnBm25, tokens
from reme_locomo.data import load_conversations
from reme_locomo.ingest import ingest


def test_each_turn_is_a_daily_note_with_an_opaque_name(tmp_path: Path) -> None:
    (conv,) = load_conversations(LOCOMO)
    ingested = ingest(tmp_path, conv)
    assert sorted(ingested.turns) == sorted(t.dia_id for t in conv.turns)
    files = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.md"))
    assert files == sorted(ingested.turn_of)
    first = next(p for p, t in ingested.turn_of.items() if t == "D1:1")
    assert first.startswith("daily/2023-05-08/t")
    text = (tmp_path / first).read_text()
    assert 'date: "2023-05-08"' in text and 'speaker: "Ana"' in text and 'time: "13:56"' in text
    assert text.endswith("---\nAna: Hi Ben! I adopted a greyhound called Pixel yesterday.\n")
    photo = next(p for p, t in ingested.turn_of.items() if t == "D1:3")
    assert "[shared a photo: a photo of a red kayak on a lake]" in (tmp_path / photo).read_text()
    everything = "\n".join([*files, *((tmp_path / f).read_text() for f in files)])
    for label in ("D1", "D2", "dia_id", "conv-t1", "session", "evidence", "greyhound\n"):
        assert label not in everything, label  # turn ids, answers: nothing but what was said


def test_a_turn_with_only_a_photo_is_its_caption(tmp_path: Path) -> None:
    (conv,) = load_conversations(REALTALK)
    ingested = ingest(tmp_path, conv)
    photo = next(p for p, t in ingested.turn_of.items() if t == "D1:4")
    assert (
        (tmp_path / photo)
        .read_text()
        .endswith("Cleo: [shared a photo: a jellyfish tank glowing blue]\n")
    )
    assert photo.startswith("daily/2023-12-30/")


def test_the_floor_is_plain_bm25_over_lowercased_word_tokens() -> None:
    assert tokens("Ana's Greyhound, 2023!") == ["ana", "s", "greyhound", "2023"]
    floor = TurnBm25(
        ["a", "b", "c", "d"],
        ["Pottery class today", "my pottery teacher likes my pottery", "beach race", "pottery"],
    )
    # No stemming ("classes" is not "class"), unmatched turns are not ranked, ties keep order.
    assert floor.rank("pottery classes", 10) == ["d", "b", "a"]
    assert floor.rank("Beach", 10) == ["c"]
    assert floor.rank("zzz", 10) == []
    assert floor.rank("pottery", 2) == ["d", "b"]


def test_a_turn_names_the_turn_it_answers_in_its_session_only(tmp_path: Path) -> None:
    (conv,) = load_conversations(LOCOMO)
    ingested = ingest(tmp_path, conv)
    path_of = {t: p for p, t in ingested.turn_of.items()}
    second = (tmp_path / path_of["D1:2"]).read_text()
    quoted = 'replying_to: "Ana: Hi Ben! I adopted a greyhound called Pixel yesterday."\n'
    assert quoted in second
    assert second.endswith("---\nBen: Congrats! I started pottery classes on Tuesday.\n")
    assert "replying_to" not in (tmp_path / path_of["D1:1"]).read_text()  # opens its session
    assert "replying_to" not in (tmp_path / path_of["D2:1"]).read_text()  # a new session
