"""A conversation into a workspace: one note per turn, as a reme user's daily notes hold them.

Each turn becomes ``daily/<day>/<fid>.md``: frontmatter with the day, the time, the speaker and
``replying_to`` (the previous turn of its session, ``<speaker>: <text>``), and a body
``<speaker>: <text>`` (with ``[shared a photo: <caption>]`` when the turn shared an image, as
LoCoMo's own retrieval code reads image turns). The file id ``fid`` is opaque (a salted
hash of the conversation and turn id, as reme-lme's ``file_id``): the upstream ``dia_id`` is the
evidence label, and paths, frontmatter and text are all the search may see, so no id, session
number or answer marker goes in. ``Ingested`` maps each note's path back to its turn id.

The body is also the BM25 floor's document (``baseline``), so the floor and reme rank the very
same text. Turns with neither text nor caption get no note (nothing to find).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from reme_locomo.data import Conversation, Turn

_SALT = "reme-locomo/turn/v1:"
UNDATED = "undated"


@dataclass
class Ingested:
    turn_of: dict[str, str] = field(default_factory=dict)
    """Note path (relative to the workspace) -> upstream turn id."""

    @property
    def turns(self) -> list[str]:
        return list(self.turn_of.values())


def file_id(conversation: str, dia_id: str) -> str:
    """``t`` and 12 hex digits of a salted sha256: says nothing of the turn or its session."""
    digest = hashlib.sha256(f"{_SALT}{conversation}\0{dia_id}".encode()).hexdigest()
    return f"t{digest[:12]}"


def turn_text(turn: Turn) -> str:
    """What a turn says, as its note's body: ``Caroline: text [shared a photo: caption]``."""
    text = " ".join(turn.text.split())
    if turn.caption:
        shared = f"[shared a photo: {' '.join(turn.caption.split())}]"
        text = f"{text} {shared}" if text else shared
    return f"{turn.speaker}: {text}" if text else ""


def note_path(conversation: str, turn: Turn) -> str:
    day = turn.when.date().isoformat() if turn.when else UNDATED
    return f"daily/{day}/{file_id(conversation, turn.dia_id)}.md"


def note_text(turn: Turn, previous: Turn | None = None) -> str:
    """The note: frontmatter (day, time, speaker; no ``name``: the chunker would prefix it to the
    indexed text) and the body. ``previous``: the turn this one answers (the one before it in its
    session), kept as ``replying_to: "<speaker>: <text>"`` (the default markdown chunker embeds it
    above the turn: ``vector_context_keys``); it is never part of the body."""
    front: dict[str, str] = {}
    if turn.when is not None:
        front["date"] = turn.when.date().isoformat()
        front["time"] = turn.when.strftime("%H:%M")
    front["speaker"] = turn.speaker
    replying_to = turn_text(previous) if previous is not None else ""
    if replying_to:
        front["replying_to"] = replying_to
    head = "\n".join(f"{k}: {json.dumps(v, ensure_ascii=False)}" for k, v in front.items())
    return f"---\n{head}\n---\n{turn_text(turn)}\n"


def ingest(root: Path, conversation: Conversation) -> Ingested:
    """Write one note per turn under ``root`` (not indexed yet)."""
    out = Ingested()
    previous: Turn | None = None
    for turn in conversation.turns:
        if not turn_text(turn):
            continue
        answers = previous if previous is not None and previous.session == turn.session else None
        previous = turn
        path = note_path(conversation.id, turn)
        known = out.turn_of.setdefault(path, turn.dia_id)
        if known != turn.dia_id:  # a hash collision would credit one turn's hits to another
            raise ValueError(f"turns {known} and {turn.dia_id} share the note {path}")
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(note_text(turn, answers), encoding="utf-8")
    return out
