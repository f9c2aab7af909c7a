"""The models that pass between the dream steps, the model and the checkpoint (pydantic v2).

Units travel through the pipeline state as plain dicts (``model_dump``); these models are how
each step reads them back, so a malformed state is an error, never a silent default.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from reme_core.api import RemeError

Bucket = Literal["procedure", "personal", "wiki"]
BUCKETS: tuple[str, ...] = ("procedure", "personal", "wiki")
Verb = Literal["CREATE", "CORROBORATE", "REFINE", "CORRECT"]
Result = Literal["applied", "unchanged", "failed", "dry-run", "proposed", "rejected"]
"""``proposed``: queued for review (``review: queue``), nothing written; ``rejected``: the same
change was rejected in review before, so it is not proposed again."""

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


class DreamError(RemeError):
    """A dream run cannot start as asked (bad params, unreadable checkpoint)."""


class DecisionRejected(RemeError):
    """A decision broke its verb's contract; the message is the reason fed back to the model."""


class DreamParams(BaseModel):
    """The params a caller may give (``reme dream --date D --dry-run``); other state is ignored."""

    model_config = ConfigDict(extra="ignore")

    date: str | None = None
    """Only that day's notes (``YYYY-MM-DD``); default every day with unprocessed notes."""
    dry_run: bool = False
    """Decide and verify, but write nothing and checkpoint nothing."""

    @field_validator("date", mode="before")
    @classmethod
    def _check_date(cls, value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, dt.date):  # YAML reads --param date=2026-11-02 as a date
            return value.isoformat()
        text = str(value).strip()
        if not _DATE.match(text):
            raise ValueError(f"date must be YYYY-MM-DD, got {value!r}")
        try:
            dt.date.fromisoformat(text)
        except ValueError:
            raise ValueError(f"date {text!r} is not a calendar day") from None
        return text

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> DreamParams:
        try:
            return cls.model_validate(state)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()
            )
            raise DreamError(f"dream params: {problems}") from None


class DreamUnit(BaseModel):
    """One thing worth remembering, extracted from one or more daily notes."""

    model_config = ConfigDict(extra="forbid")

    id: str
    name: str = Field(min_length=1)
    bucket: Bucket
    summary: str = Field(min_length=1)
    sources: list[str] = Field(min_length=1)
    """Daily note paths the unit comes from."""
    source_hashes: dict[str, str] = Field(default_factory=dict)
    """Content hash of each source when the unit was extracted (a changed note re-extracts)."""

    @staticmethod
    def make_id(name: str, bucket: str, summary: str, sources: list[str]) -> str:
        payload = json.dumps([name, bucket, summary, sorted(sources)], ensure_ascii=False)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:12]


class ExtractedUnit(BaseModel):
    """A unit as the model writes it (the core adds the id and hashes)."""

    name: str = Field(min_length=1, max_length=200)
    bucket: Bucket
    summary: str = Field(min_length=1)
    sources: list[str] = Field(min_length=1)

    @field_validator("bucket", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value


class Extraction(BaseModel):
    """The model's answer to one extraction batch."""

    units: list[ExtractedUnit] = Field(default_factory=list)


class TextEdit(BaseModel):
    """Replace one unique span of the target's text."""

    path: str | None = None
    """The file the edit is for; when given it must be the decision's target."""
    old_text: str = Field(min_length=1)
    new_text: str


class Decision(BaseModel):
    """How one unit is integrated: one verb on one digest node."""

    verb: Verb
    target: str = Field(min_length=1)
    """``digest/<bucket>/<name>.md``: a new path for CREATE, a candidate node otherwise."""
    content: str | None = None
    """Full Markdown: the new node (CREATE) or the whole new text (REFINE, CORRECT)."""
    edit: TextEdit | None = None
    """Instead of ``content`` (REFINE, CORRECT): replace one unique span of the target."""
    evidence: str | None = None
    """CORRECT: the source note that contradicts the node."""
    note: str = ""
    """One line: why this verb and target."""

    @field_validator("verb", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.strip().upper() if isinstance(value, str) else value


class UnitOutcome(BaseModel):
    """What happened to one unit in one run (one row of `reme dream`)."""

    unit: str
    """The unit's id."""
    name: str
    bucket: Bucket
    sources: list[str]
    verb: Verb | None = None
    target: str | None = None
    result: Result
    reason: str | None = None
    """Why it failed (the last rejection or model error); None otherwise."""
    note: str = ""
    attempts: int = 0
    rejections: list[str] = Field(default_factory=list)
    """Every reason a decision was turned down in this run, in order."""
    candidates: list[str] = Field(default_factory=list)
    """The digest nodes search proposed for this unit."""
    proposal: str | None = None
    """``proposed`` / ``rejected``: the review proposal's id."""
    superseded: str | None = None
    """An applied CORRECT: the copy that keeps the node as it was (``status: superseded``)."""

    @property
    def succeeded(self) -> bool:
        """Handled: nothing for the next run to retry (a proposal waits for review instead)."""
        return self.result in ("applied", "unchanged", "dry-run", "proposed", "rejected")
