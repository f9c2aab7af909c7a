"""The proactive operations: the follow-up topics (``proactive``, read: ``GET|POST
/api/v1/proactive``, ``reme proactive list``, the MCP resource and prompt, the studio) and a run
of the ``proactive`` pipeline (``proactive_run``, write).

The topics are read from ``daily/_proactive.yaml`` as the pipeline wrote it; a malformed file
is an error naming the problem, not an empty list.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from pydantic import field_validator

from reme_core.errors import NotFoundError
from reme_core.runtime import Reme
from reme_core.schema.proactive import NOTE_PATH, TOPIC_STATES, TOPICS_PATH, ProactiveTopics
from reme_core.service.framework import Input, Operation

PIPELINE = "proactive"
Shown = Literal["raised", "open", "resolved", "snoozed", "all"]


class ProactiveInput(Input):
    state: Shown = "raised"
    """``raised``: what the note raises (open, and snoozed ones due by ``today``); a state; all."""
    today: str | None = None
    """``YYYY-MM-DD``: the day snoozed topics are compared with; default today."""

    @field_validator("today")
    @classmethod
    def _day(cls, value: str | None) -> str | None:
        if value is not None:
            dt.date.fromisoformat(value)
        return value


class ProactiveRunInput(Input):
    dry_run: bool = False
    today: str | None = None


def _read(reme: Reme, path: str) -> str | None:
    _, absolute = reme.paths.resolve(path, for_write=True)
    try:
        return absolute.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def proactive(reme: Reme, given: ProactiveInput) -> dict[str, Any]:
    """The topics (as ``given.state`` selects), counts per state, and the note's text."""
    today = given.today or dt.datetime.now(reme.settings.tzinfo()).date().isoformat()
    topics = ProactiveTopics.parse(_read(reme, TOPICS_PATH), TOPICS_PATH)
    if given.state == "raised":
        shown = topics.to_raise(today)
    elif given.state == "all":
        shown = list(topics.topics)
    else:
        shown = [t for t in topics.topics if t.state == given.state]
    counts = {state: sum(t.state == state for t in topics.topics) for state in TOPIC_STATES}
    return {
        "path": TOPICS_PATH,
        "note_path": NOTE_PATH,
        "today": today,
        "state": given.state,
        "updated": topics.updated,
        "counts": counts,
        "raised": len(topics.to_raise(today)),
        "topics": [t.model_dump(mode="json") for t in shown],
        "note": _read(reme, NOTE_PATH),
    }


def _run(reme: Reme, given: ProactiveRunInput) -> Any:
    if PIPELINE not in reme.settings.pipelines:
        raise NotFoundError(f"pipeline {PIPELINE!r} is not configured (pipelines.{PIPELINE})")
    return reme.run(PIPELINE, given.model_dump(exclude_none=True, exclude_defaults=True))


PROACTIVE_OPERATIONS: list[Operation] = [
    Operation(
        "proactive",
        "read",
        "Open follow-up topics kept from the daily notes (daily/_proactive.yaml): what to "
        "raise next session, or the topics in one state.",
        ProactiveInput,
        proactive,
        read_only=True,
        idempotent=True,
    ),
    Operation(
        "proactive_run",
        "write",
        "Update the follow-up topics from the daily notes changed since the last run "
        "(verified; review: queue proposes instead).",
        ProactiveRunInput,
        _run,
    ),
]
