"""A BEAM conversation as dated sessions, ready for ``auto_memory``.

BEAM has no session ids or timestamps, only batches whose first message (sometimes the batch
itself) carries a ``time_anchor`` such as ``March-15-2024``. A session is one batch (default) or
one turn group of a batch. Its day is the latest anchor seen (a message anchor mid-batch moves
later messages to that day); before any anchor, or for a batch without one, the day after the
previous batch's day (from ``START`` when nothing is anchored). Messages are timed one second
apart from 09:00 that day, so their order survives in the transcript and the notes.

Questions carry no date: every session precedes every question, so none is dropped.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from pydantic import BaseModel

from reme_beam.data import BeamMessage, Conversation

SessionUnit = Literal["batch", "turn"]
START = dt.date(2024, 1, 1)
DAY_START = dt.time(9, 0)
ANCHOR_FORMATS = ("%B-%d-%Y", "%b-%d-%Y", "%B %d, %Y", "%b %d, %Y", "%Y-%m-%d", "%m/%d/%Y")
_ROLES = {"user", "assistant", "system"}


class Session(BaseModel):
    id: str
    """Safe as a file name: ``sessions/<id>.jsonl``."""
    date: dt.date
    batch: int
    messages: list[dict[str, Any]]
    """``{id, role, content, timestamp}`` as the ``auto_memory`` step takes them."""


def parse_anchor(value: str | None) -> dt.date | None:
    """``March-15-2024`` (upstream's form) and a few other spellings; None when unreadable."""
    if not value or not value.strip():
        return None
    text = value.strip()
    for form in ANCHOR_FORMATS:
        try:
            return dt.datetime.strptime(text, form).date()
        except ValueError:
            continue
    return None


def build_sessions(conversation: Conversation, unit: SessionUnit = "batch") -> list[Session]:
    """The conversation's sessions in time order (stable for equal days)."""
    sessions: list[Session] = []
    day: dt.date | None = None
    for position, batch in enumerate(conversation.batches, start=1):
        number = batch.batch_number if batch.batch_number is not None else position
        anchored = parse_anchor(batch.time_anchor)
        if anchored is None:
            first = next((m for turn in batch.turns for m in turn), None)
            anchored = parse_anchor(first.time_anchor) if first is not None else None
        day = anchored or (day + dt.timedelta(days=1) if day is not None else START)
        clock = _Clock(day)
        groups = [batch.turns] if unit == "batch" else [[turn] for turn in batch.turns]
        for index, group in enumerate(groups, start=1):
            messages = []
            for message in (m for turn in group for m in turn):
                messages.append(_message(message, clock))
            if not messages:
                continue
            sid = f"beam-b{number:03d}" + ("" if unit == "batch" else f"-t{index:03d}")
            first_day = dt.datetime.fromisoformat(messages[0]["timestamp"]).date()
            sessions.append(Session(id=sid, date=first_day, batch=number, messages=messages))
        day = clock.day
    return sorted(sessions, key=lambda s: s.date)


class _Clock:
    """Message times within a batch: one second apart, restarting on each new anchored day."""

    def __init__(self, day: dt.date):
        self.day = day
        self.tick = 0

    def stamp(self, anchor: str | None) -> dt.datetime:
        moved = parse_anchor(anchor)
        if moved is not None and moved != self.day:
            self.day, self.tick = moved, 0
        seconds = min(self.tick, 14 * 3600)  # stay within the day (09:00 + 14 h)
        self.tick += 1
        return dt.datetime.combine(self.day, DAY_START) + dt.timedelta(seconds=seconds)


def _message(message: BeamMessage, clock: _Clock) -> dict[str, Any]:
    stamp = clock.stamp(message.time_anchor)
    role = message.role if message.role in _ROLES else "user"
    return {
        "id": message.key,
        "role": role,
        "content": message.text,
        "timestamp": stamp.isoformat(),
    }
