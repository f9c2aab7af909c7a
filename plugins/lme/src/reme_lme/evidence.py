"""What counts as retrieved evidence for one question, following the official protocol.

Upstream (``src/retrieval/run_retrieval.py``) indexes user turns only and marks a corpus id
correct when it comes from an evidence session and, at turn level, the turn has ``has_answer``; an
evidence session without a user turn marked ``has_answer`` is renamed ``noans`` and is not
correct. A question with no correct id is skipped, as are abstention questions (``_abs``).

Here the corpus is every haystack session, as upstream (sessions dated after the question
included). Items with no ``has_answer`` label at all (other releases) are scored at session level
on ``answer_session_ids``, and not at turn level.
"""

from __future__ import annotations

from dataclasses import dataclass

from reme_lme.data import Item, Session


@dataclass(frozen=True)
class Evidence:
    session_corpus: list[str]
    sessions: list[str]
    """Correct session ids (empty: the question is skipped)."""
    turn_corpus: list[str]
    """User turn ids of the kept sessions."""
    turns: list[str]
    """Correct turn ids (empty with no turn labels: no turn-level metrics)."""
    skip: str | None
    """Why the question has no retrieval metrics, or None."""


def evidence(item: Item, sessions: list[Session]) -> Evidence:
    labelled = any(t.has_answer for s in item.haystack_sessions for t in s)
    wanted = set(item.answer_session_ids)
    session_corpus = [s.id for s in sessions]
    turn_corpus = [
        s.turn_id(i) for s in sessions for i, t in enumerate(s.turns) if t.role == "user"
    ]
    if labelled:
        turns = [
            s.turn_id(i)
            for s in sessions
            if s.id in wanted
            for i, t in enumerate(s.turns)
            if t.role == "user" and t.has_answer
        ]
        correct = list(dict.fromkeys(t.rsplit("_", 1)[0] for t in turns))
    else:
        turns = []
        correct = [sid for sid in session_corpus if sid in wanted]
    skip = None
    if item.abstention:
        skip = "abstention"
    elif not correct:
        skip = "no user evidence"
    return Evidence(session_corpus, correct, turn_corpus, turns, skip)
