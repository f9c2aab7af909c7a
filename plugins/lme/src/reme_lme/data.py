"""LongMemEval files (``longmemeval_s_cleaned.json``, ``_oracle``, ``_m``; ``.json`` or ``.json.gz``)
and what one question's run needs from them.

An upstream item: ``question_id`` (suffix ``_abs`` = abstention), ``question_type``,
``question``, ``answer``, ``question_date`` (``2023/05/30 (Tue) 23:40``), and parallel lists
``haystack_session_ids``, ``haystack_dates``, ``haystack_sessions`` (a session is a list of
``{role, content, has_answer?}``), plus ``answer_session_ids`` (the evidence).
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

_DATE = re.compile(r"^\s*(\d{4})/(\d{1,2})/(\d{1,2})(?:\s*\([A-Za-z]+\))?(?:\s+(\d{1,2}):(\d{2}))?")


class Turn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    role: str
    content: str
    has_answer: bool = False


class Session(BaseModel):
    """One haystack session as the runner ingests it."""

    id: str
    date: dt.datetime
    turns: list[Turn]

    def turn_id(self, index: int) -> str:
        """The official turn id: ``<session id>_<1-based turn number>`` (all roles counted)."""
        return f"{self.id}_{index + 1}"


class Item(BaseModel):
    """One question with its haystack, upstream field names kept."""

    model_config = ConfigDict(extra="ignore")

    question_id: str
    question_type: str
    question: str
    answer: str
    question_date: str
    haystack_session_ids: list[str]
    haystack_dates: list[str]
    haystack_sessions: list[list[Turn]]
    answer_session_ids: list[str] = Field(default_factory=list)

    @property
    def abstention(self) -> bool:
        return self.question_id.endswith("_abs")

    @property
    def asked(self) -> dt.datetime:
        return parse_date(self.question_date)

    def sessions(self) -> tuple[list[Session], int]:
        """Haystack sessions in time order (stable for equal times), without those dated after
        the question; and how many were dropped for that."""
        asked = self.asked
        sessions = [
            Session(id=sid, date=parse_date(date), turns=turns)
            for sid, date, turns in zip(
                self.haystack_session_ids, self.haystack_dates, self.haystack_sessions, strict=True
            )
        ]
        kept = sorted((s for s in sessions if s.date <= asked), key=lambda s: s.date)
        return kept, len(sessions) - len(kept)


def parse_date(text: str) -> dt.datetime:
    """``2023/05/30 (Tue) 23:40`` (time optional) -> a naive datetime."""
    found = _DATE.match(text)
    if found is None:
        raise ValueError(f"not a LongMemEval date: {text!r}")
    year, month, day, hour, minute = found.groups()
    return dt.datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0))


def load_items(path: str | Path) -> list[Item]:
    """Every question of a LongMemEval file (S, M or oracle; ``.json`` or ``.json.gz``)."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        data: Any = json.load(handle)
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of LongMemEval questions")
    return [_item(raw) for raw in data]


def _item(raw: dict[str, Any]) -> Item:
    # The oracle split has integer answers (counts); answers are compared as text.
    raw = {**raw, "answer": str(raw.get("answer", ""))}
    return Item.model_validate(raw)
