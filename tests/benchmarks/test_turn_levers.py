"""The turn-lever harness: text variants of a conversation, and rows fused across variants."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import conversations  # noqa: E402
import turn_levers  # noqa: E402
import turn_sets  # noqa: E402

CHAT = conversations.Conversation(
    "chat",
    turns=[
        conversations.Turn("D1:1", "Ana", "I ran my first marathon last weekend in Boston!", "2023-05-08"),
        conversations.Turn("D1:2", "Ben", "Wow, congrats!", "2023-05-08"),
        conversations.Turn("D2:1", "Ana", "Hi again, how was the trip you took?", "2023-06-01"),
    ],
)  # fmt: skip


def bodies(root: Path, variant: str) -> dict[str, str]:
    """Turn id -> its note's body (after the frontmatter)."""
    owners = turn_sets.write_variant(CHAT, root, variant)
    out = {}
    for note in root.rglob("*.md"):
        out[owners[note.stem]] = note.read_text("utf-8").split("---\n", 2)[2].strip()
    return out


@pytest.mark.parametrize(
    ("variant", "reply", "first_of_session"),
    [
        ("plain", "Ben: Wow, congrats!", "Ana: Hi again, how was the trip you took?"),
        ("header", "Ben: Wow, congrats!", "Ana: Hi again, how was the trip you took?"),
        (
            "prev",
            "> Ana: I ran my first marathon last weekend in Boston!\n\nBen: Wow, congrats!",
            "Ana: Hi again, how was the trip you took?",  # no turn before it in its session
        ),
        (
            "prev-short",  # the reply is short: quoted; a long first turn is never quoted
            "> Ana: I ran my first marathon last weekend in Boston!\n\nBen: Wow, congrats!",
            "Ana: Hi again, how was the trip you took?",
        ),
    ],
)
def test_variants_write_the_turn_and_only_what_they_name(
    tmp_path: Path, variant: str, reply: str, first_of_session: str
) -> None:
    texts = bodies(tmp_path, variant)
    assert texts["D1:2"] == reply
    assert texts["D2:1"] == first_of_session
    assert texts["D1:1"] == "Ana: I ran my first marathon last weekend in Boston!"
    # the header variant's day line comes from the chunker (context_keys), not from the note
    assert all("Monday" not in t for t in texts.values())


def test_long_turns_are_not_quoted_by_prev_short(tmp_path: Path) -> None:
    long = conversations.Turn("D1:3", "Ana", " ".join(["word"] * 12), "2023-05-08")
    chat = conversations.Conversation("c", turns=[*CHAT.turns[:2], long])
    owners = turn_sets.write_variant(chat, tmp_path, "prev-short")
    note = next(p for p in tmp_path.rglob("*.md") if owners[p.stem] == "D1:3")
    assert ">" not in note.read_text("utf-8")


def _row(arms: dict, owner: dict, dates: dict, question: str = "what happened") -> dict:
    return {
        "question": question,
        "arms": arms,
        "answers": ["t2"],
        "owner": owner,
        "group": "temporal",
        "metric": "share",
        "as_of": "2024-05-15",
        "dates": dates,
    }


def test_keyword_from_one_variant_fuses_with_vectors_from_another() -> None:
    owner = {"c1": "t1", "c2": "t2"}
    kw = _row(
        {"keyword": [["c1", 4.0], ["c2", 3.9]], "vector": [["c1", 0.9], ["c2", 0.1]]}, owner, {}
    )
    vec = _row({"keyword": [], "vector": [["c2", 0.9], ["c1", 0.1]]}, owner, {})
    plain = turn_levers.Config("plain")
    mixed = turn_levers.Config("mixed", "plain", "prev", weight=0.5)
    assert turn_levers.ranking(plain, kw, kw) == ["c1", "c2"]
    assert turn_levers.ranking(mixed, kw, vec) == ["c2", "c1"]  # the other variant's vectors
    assert turn_levers.ranking(turn_levers.Config("kw", weight=0.0), kw, vec) == ["c1", "c2"]


def test_the_date_lever_moves_the_day_the_question_names_up() -> None:
    owner = {"c1": "t1", "c2": "t2"}
    dates = {"t1": "2024-04-02", "t2": "2024-05-11"}
    arms = {"keyword": [["c1", 4.0], ["c2", 3.0]], "vector": [["c1", 0.9], ["c2", 0.8]]}
    row = _row(arms, owner, dates, "where did we hike last Saturday")
    assert turn_levers.ranking(turn_levers.Config("d"), row, row) == ["c1", "c2"]
    boosted = turn_levers.Config("d", date_weight=0.5)
    assert turn_levers.ranking(boosted, row, row) == ["c2", "c1"]
    undated = _row(arms, owner, dates, "where did we hike")
    assert turn_levers.ranking(boosted, undated, undated) == ["c1", "c2"]


def test_sets_that_are_not_conversations_have_no_previous_turn() -> None:
    assert turn_levers._set_variant("entities-keyword", "header+prev") == "header"
    assert turn_levers._set_variant("synthetic-paraphrase", "prev") == "plain"
    assert turn_levers._set_variant("locomo", "prev-short") == "prev-short"
    with pytest.raises(ValueError, match="unknown variant"):
        turn_sets.load_variant("locomo", "nonsense", Path("/nonexistent"))
