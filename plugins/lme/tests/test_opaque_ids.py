"""No label reaches the indexed workspace: LongMemEval names evidence sessions ``answer_...`` and
the others ``sharegpt_...``, ``ultrachat_...`` or hex, so a session id in a path, anchor or note
would tell search which sessions are evidence. Every workspace a question opens (sessions, turns,
memory) is read before it is deleted; the metrics still name and credit the real sessions."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest
import reme_lme.ingest
import reme_lme.turn_level
import reme_lme.worker
from reme_lme.data import Item, load_items
from reme_lme.ingest import Ingested, file_id, ingest_raw
from reme_lme.runner import CONFIG_DIR
from reme_lme.worker import Options, score_item

from reme_core.bench import resolve_config
from reme_core.runtime import Reme

EVIDENCE = "answer_k3v9"
OTHERS = ["sharegpt_Wq7ZP_12", "ultrachat_88231", "7e1f0c2a"]
QUESTION_ID = "gpt4_2f8e1c0a"
FORBIDDEN = ["answer_", "sharegpt", "ultrachat", EVIDENCE, *OTHERS, QUESTION_ID]

Snapshot = dict[str, str]
"""A workspace's files outside ``.reme/``: relative path -> text."""


def _item(tmp_path: Path) -> Item:
    def session(user: list[tuple[str, bool]]) -> list[dict[str, Any]]:
        turns: list[dict[str, Any]] = []
        for text, has_answer in user:
            turns.append({"role": "user", "content": text, "has_answer": has_answer})
            turns.append({"role": "assistant", "content": "Noted, thanks."})
        return turns

    raw = {
        "question_id": QUESTION_ID,
        "question_type": "single-session-user",
        "question": "Which instrument does my neighbour Ottilie teach?",
        "answer": "the cello",
        "question_date": "2023/06/01 (Thu) 10:00",
        "haystack_session_ids": [OTHERS[0], EVIDENCE, OTHERS[1], OTHERS[2]],
        "haystack_dates": ["2023/05/01 (Mon) 10:00", "2023/05/03 (Wed) 09:00",
                           "2023/05/02 (Tue) 12:00", "2023/05/04 (Thu) 08:00"],
        "haystack_sessions": [
            session([("What is a good recipe for lentil soup on a cold evening?", False)]),
            session([("Can you suggest a book about the history of Rome?", False),
                     ("My neighbour Ottilie teaches the cello at the music school.", True)]),
            session([("How do I change the inner tube of a bike tire?", False)]),
            session([("Which houseplants survive in a dark flat?", False)]),
        ],
        "answer_session_ids": [EVIDENCE],
    }  # fmt: skip
    path = tmp_path / "item.json"
    path.write_text(json.dumps([raw]), encoding="utf-8")
    return load_items(path)[0]


def _files(root: Path) -> Snapshot:
    return {
        p.relative_to(root).as_posix(): p.read_text(encoding="utf-8", errors="replace")
        for p in root.rglob("*")
        if p.is_file() and p.relative_to(root).parts[0] != ".reme"
    }


def _capturing(
    real: Callable[..., AbstractContextManager[Reme]], seen: list[Snapshot]
) -> Callable[..., AbstractContextManager[Reme]]:
    @contextmanager
    def opened(*args: Any, **kwargs: Any) -> Iterator[Reme]:
        with real(*args, **kwargs) as reme:
            yield reme
            seen.append(_files(reme.root))  # ingested, indexed and searched; not yet deleted

    return opened


@pytest.fixture
def workspaces(monkeypatch: pytest.MonkeyPatch, plugins: object) -> list[Snapshot]:
    """Every workspace ``score_item`` opens, as it was when the question was done with it."""
    seen: list[Snapshot] = []
    for module in (reme_lme.worker, reme_lme.turn_level):
        monkeypatch.setattr(module, "fresh_workspace", _capturing(module.fresh_workspace, seen))
    return seen


def _leaks(snapshot: Snapshot) -> list[str]:
    return [
        f"{path}: {label!r}"
        for path, text in snapshot.items()
        for label in FORBIDDEN
        if label.lower() in path.lower() or label.lower() in text.lower()
    ]


def _options(config: str, **more: Any) -> Options:
    settings = resolve_config(config, config_dirs=[CONFIG_DIR]).settings
    return Options(config=settings.model_dump(mode="json"), **more)


def test_raw_workspaces_hold_no_session_or_question_id(
    tmp_path: Path, workspaces: list[Snapshot]
) -> None:
    row = score_item(_item(tmp_path), _options("bm25"))
    sessions, turns = workspaces  # the session notes, then the turn corpus
    assert sum(p.startswith("daily/") for p in sessions) == 4
    assert sum(p.startswith("turns/") for p in turns) == 5  # one note per user turn
    assert sum(p.startswith("sessions/") for p in sessions) == 4
    assert _leaks(sessions) == [] and _leaks(turns) == []
    assert all(set(json.loads(line)) == {"role", "content"}  # no has_answer in transcripts
               for p, text in sessions.items() if p.startswith("sessions/")
               for line in text.splitlines())  # fmt: skip
    # Scored on the real ids: the evidence session and its second user turn (turn 3) first.
    assert row["evidence"] == [EVIDENCE]
    assert row["top_sessions"][0] == EVIDENCE
    assert row["top_turns"][0] == f"{EVIDENCE}_3"
    assert row["metrics"]["session_recall_all@1"] == 1.0
    assert row["metrics"]["turn_recall_all@1"] == 1.0


def test_memory_workspace_holds_no_session_or_question_id(
    tmp_path: Path, workspaces: list[Snapshot]
) -> None:
    """auto_memory (no model: excerpt notes) is given the file id as its session id."""
    row = score_item(_item(tmp_path), _options("memory", mode="memory"))
    (memory,) = workspaces
    assert sum(p.startswith("sessions/") for p in memory) == 4
    assert any(p.endswith(".md") for p in memory)
    assert _leaks(memory) == []
    assert row["evidence"] == [EVIDENCE] and row["top_sessions"][0] == EVIDENCE
    assert row["metrics"]["session_recall_any@1"] == 1.0


def test_file_ids_are_opaque_and_stable() -> None:
    fid = file_id(EVIDENCE)
    assert fid == file_id(EVIDENCE) and fid.startswith("s") and len(fid) == 13
    assert "answer" not in fid and fid != file_id(OTHERS[0])


def test_a_shared_file_id_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two sessions in one file would credit each other's hits: a collision stops the item."""
    sessions = _item(tmp_path).sessions()[0]
    monkeypatch.setattr(reme_lme.ingest, "file_id", lambda _: "s000000000000")
    with pytest.raises(ValueError, match=r"share file sessions/s000000000000\.jsonl"):
        ingest_raw(tmp_path / "ws", sessions)
    # The same id twice (two dev50 haystacks repeat one) is one session, as before.
    again = Ingested()
    assert again.claim(EVIDENCE) == again.claim(EVIDENCE)
