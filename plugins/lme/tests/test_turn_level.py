"""Turn-level ranking over a corpus of user turns (the official turn granularity): the relevant
turn ranks first wherever it sits in its session, and the turn metrics count turns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from reme_lme.data import Item, load_items
from reme_lme.ingest import file_id, ingest_turns
from reme_lme.runner import CONFIG_DIR
from reme_lme.worker import Options, score_item

from reme_core.bench import resolve_config

FILLER = [
    ("filler_a", "What is a good recipe for lentil soup on a cold evening?"),
    ("filler_b", "How do I change the inner tube of a bike tire?"),
]


def _item(tmp_path: Path, qid: str, question: str, turns: list[tuple[str, bool]]) -> Item:
    """One question whose evidence session ``answer_<qid>`` holds ``turns`` (user text, has
    answer), each followed by an assistant reply, next to two unrelated sessions."""
    evidence = []
    for text, has_answer in turns:
        evidence.append({"role": "user", "content": text, "has_answer": has_answer})
        evidence.append({"role": "assistant", "content": "Noted, thanks for telling me."})
    filler = [
        [{"role": "user", "content": text, "has_answer": False}, {"role": "assistant", "content": "Sure."}]
        for _, text in FILLER
    ]  # fmt: skip
    raw = {
        "question_id": qid,
        "question_type": "single-session-user",
        "question": question,
        "answer": "-",
        "question_date": "2023/06/01 (Thu) 10:00",
        "haystack_session_ids": [f"answer_{qid}", *(sid for sid, _ in FILLER)],
        "haystack_dates": ["2023/05/03 (Wed) 09:00", "2023/05/01 (Mon) 10:00", "2023/05/02 (Tue) 12:00"],
        "haystack_sessions": [evidence, *filler],
        "answer_session_ids": [f"answer_{qid}"],
    }  # fmt: skip
    path = tmp_path / f"{qid}.json"
    path.write_text(json.dumps([raw]), encoding="utf-8")
    return load_items(path)[0]


def _score(item: Item, config: str = "bm25") -> dict[str, Any]:
    settings = resolve_config(config, config_dirs=[CONFIG_DIR]).settings
    return score_item(item, Options(config=settings.model_dump(mode="json")))


@pytest.mark.usefixtures("plugins")
def test_the_relevant_last_turn_of_a_session_ranks_first(tmp_path: Path) -> None:
    item = _item(
        tmp_path,
        "q1",
        "What does my sister Clara do for a living?",
        [
            ("Can you recommend a book about the history of Rome?", False),
            ("I also want to plan a weekend in the mountains in July.", False),
            ("By the way, my sister Clara is a veterinary surgeon in Lyon.", True),
        ],
    )
    row = _score(item)
    # A session note would list the session's turns in line order: _1 and _3 ahead of _5.
    assert row["top_turns"][0] == "answer_q1_5"
    assert row["metrics"]["turn_recall_all@1"] == 1.0
    assert row["metrics"]["turn_ndcg_any@1"] == 1.0


@pytest.mark.usefixtures("plugins")
def test_turn_metrics_count_turns_not_notes(tmp_path: Path) -> None:
    item = _item(
        tmp_path,
        "q2",
        "What name did my sister give her puppy?",
        [
            ("My sister adopted a puppy last week and named it Biscuit.", True),
            ("How long should I boil an egg?", False),
            ("The puppy Biscuit already chewed my sister's shoes.", True),
        ],
    )
    row = _score(item)
    metrics = row["metrics"]
    # One session (one note) holds both evidence turns: the session is found at 1, but the
    # first turn alone is half the evidence; two turns are all of it.
    assert metrics["session_recall_all@1"] == 1.0
    assert metrics["turn_recall_any@1"] == 1.0
    assert metrics["turn_recall_all@1"] == 0.0
    assert metrics["turn_recall_all@3"] == 1.0
    assert set(row["top_turns"][:2]) == {"answer_q2_1", "answer_q2_5"}
    assert "answer_q2_3" not in row["top_turns"][:2]


def test_turn_ingestion_writes_one_anchored_note_per_user_turn(tmp_path: Path) -> None:
    item = _item(tmp_path, "x", "q?", [("first turn", False), ("second turn", True)])
    ingested = ingest_turns(tmp_path / "ws", item.sessions()[0])
    notes = sorted(
        p.relative_to(tmp_path / "ws").as_posix() for p in (tmp_path / "ws").rglob("*.md")
    )
    evidence, a, b = file_id("answer_x"), file_id("filler_a"), file_id("filler_b")
    assert notes == sorted([f"turns/{evidence}/1.md", f"turns/{evidence}/3.md", f"turns/{a}/1.md", f"turns/{b}/1.md"])  # fmt: skip
    third = (tmp_path / f"ws/turns/{evidence}/3.md").read_text()
    assert third.rstrip().endswith(f"[[sessions/{evidence}.jsonl#L3]] second turn")
    assert "first turn" not in third
    assert ingested.turn_id(f"sessions/{evidence}.jsonl", 3) == "answer_x_3"
