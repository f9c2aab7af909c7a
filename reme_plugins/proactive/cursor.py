"""Which daily notes the proactive pipeline has read: ``.reme/proactive/cursor.json``.

Per note the content hash last read; a note whose hash differs (or is new) is read again. The
cursor advances only after the topics it produced were written (or proposed, or a proposal of
them was rejected), so a run the model failed leaves its notes to the next one.

Each save is kept beside the hash of the topics file it goes with (the last ``KEEP``). When the
file is reverted in history to an earlier state, the cursor saved with that state is the one
used, so the notes read since are read again: reverting a run undoes its reading as well as its
writing. A hand-edited file matches no entry and keeps the newest cursor.
"""

from __future__ import annotations

import json
from collections.abc import Set
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from reme_core.api import RemeError, atomic_write

FILE = Path("proactive") / "cursor.json"
KEEP = 50


class Mark(BaseModel):
    topics_hash: str | None
    """The topics file's content hash after the run (None: no file)."""
    notes: dict[str, str] = Field(default_factory=dict)
    """Note path -> the content hash read."""
    at: str


class Cursor(BaseModel):
    version: Literal[1] = 1
    marks: list[Mark] = Field(default_factory=list)
    """Oldest first; the last is the newest."""

    def notes_for(self, topics_hash: str | None) -> dict[str, str]:
        """The notes read as of the topics file with ``topics_hash`` (see the module doc)."""
        for mark in reversed(self.marks):
            if mark.topics_hash == topics_hash:
                return dict(mark.notes)
        if topics_hash is None:
            return {}  # the file is gone (reverted to before the first run): read everything
        return dict(self.marks[-1].notes) if self.marks else {}

    def advanced(self, topics_hash: str | None, read: dict[str, str], at: str) -> Cursor:
        """The cursor with ``read`` added on top of the notes as of ``base``."""
        return Cursor(marks=[*self.marks, Mark(topics_hash=topics_hash, notes=read, at=at)][-KEEP:])


def load_cursor(state_dir: Path) -> Cursor:
    path = state_dir / FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Cursor()
    except OSError as exc:
        raise RemeError(f"cannot read the proactive cursor {path}: {exc.strerror}") from None
    try:
        return Cursor.model_validate_json(text)
    except ValidationError as exc:
        raise RemeError(
            f"the proactive cursor {path} is damaged ({exc.errors()[0]['msg']}); move it aside "
            "to read every daily note again"
        ) from None


def save_cursor(state_dir: Path, cursor: Cursor) -> None:
    data = json.dumps(cursor.model_dump(mode="json"), indent=1, ensure_ascii=False)
    atomic_write(state_dir / FILE, (data + "\n").encode("utf-8"))


def forget_notes(state_dir: Path, paths: Set[str]) -> bool:
    """Drop purged notes from every saved mark (the marks stay, so nothing is read again);
    returns whether the cursor changed."""
    if not (state_dir / FILE).is_file():
        return False
    cursor = load_cursor(state_dir)
    kept = Cursor(
        marks=[
            m.model_copy(update={"notes": {p: h for p, h in m.notes.items() if p not in paths}})
            for m in cursor.marks
        ]
    )
    if kept == cursor:
        return False
    save_cursor(state_dir, kept)
    return True
