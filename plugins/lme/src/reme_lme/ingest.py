"""One question's haystack into a fresh workspace, sessions in time order.

Sessions are named in the workspace by an opaque file id (``file_id``), never by their upstream
id: LongMemEval's ids are labels (evidence sessions are ``answer_...``, the others
``sharegpt_...``, ``ultrachat_...`` or hex), and every path, anchor and note is indexed text, so
keyword and vector search alike could tell evidence from filler by name. Upstream's retrieval
shows the retriever the turn text only. ``Ingested`` maps file ids back to the real ids, which
the ranking and the metrics use.

``raw`` (no LLM): per session a transcript ``sessions/<fid>.jsonl`` (one line per turn, so line
``n`` is turn ``n``) and a note ``daily/<date>/<fid>.md`` holding the user turns (what the official
protocol indexes), each a paragraph that opens with its anchor ``[[sessions/<fid>.jsonl#Ln]]``.
Files are written directly and indexed once.

``turns`` (no LLM, for the turn-level metrics): the same transcripts, and one note per user turn
``turns/<fid>/<n>.md`` (its anchor and its text), the corpus of the official turn granularity
(``src/retrieval/run_retrieval.py --granularity turn`` indexes each user turn as a document), so
a search ranks turns themselves, not notes packing several turns.

``memory``: each session goes through an auto_memory pipeline (``auto_memory`` or a variant such
as ``auto_memory_lme``) with the configured model, then optionally ``dream`` once at the end.
The transcript lines auto_memory saved are aligned back to the upstream turns by content.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from reme_core.api import Reme
from reme_lme.anchors import anchor_link
from reme_lme.data import Session

Mode = Literal["raw", "memory"]
_FILE_ID_SALT = "reme-lme/session/v1:"


@dataclass
class Ingested:
    """Where each session landed: transcript file -> real session id, and line -> turn index."""

    session_of: dict[str, str] = field(default_factory=dict)
    """Per transcript path (``sessions/<fid>.jsonl``), the upstream session id."""
    turn_of_line: dict[str, dict[int, int]] = field(default_factory=dict)
    """Per transcript path, 1-based line -> 0-based upstream turn index."""
    runs: list[dict[str, Any]] = field(default_factory=list)
    """Pipeline results (memory mode), for usage and failures."""

    def turn_id(self, transcript: str, line: int) -> str | None:
        index = self.turn_of_line.get(transcript, {}).get(line)
        sid = self.session_of.get(transcript)
        return None if index is None or sid is None else f"{sid}_{index + 1}"

    def claim(self, session_id: str) -> str:
        """The transcript path of ``session_id``, recorded; refuses a file id two ids share (a
        hash collision would silently credit one session's hits to the other)."""
        transcript = f"sessions/{file_id(session_id)}.jsonl"
        known = self.session_of.setdefault(transcript, session_id)
        if known != session_id:
            raise ValueError(f"sessions {known!r} and {session_id!r} share file {transcript}")
        return transcript


def file_id(session_id: str) -> str:
    """The session's name in the workspace: ``s`` and 12 hex digits of a salted sha256 of its id.

    It says nothing about the session (no ``answer_`` prefix, no id fragment) and is a valid
    file name and auto_memory session id. A hash rather than the haystack position keeps a
    session's notes the same text in every question whose haystack holds it, so the shared
    embedding cache (keyed by chunk content) still serves them across questions.
    """
    digest = hashlib.sha256((_FILE_ID_SALT + session_id).encode("utf-8")).hexdigest()
    return f"s{digest[:12]}"


def ingest_raw(root: Path, sessions: list[Session]) -> Ingested:
    """Write transcripts and user-turn notes for ``sessions`` under ``root`` (not indexed yet)."""
    out = Ingested()
    for session in sessions:
        fid = _transcript(root, session, out)
        _write(root / "daily" / session.date.date().isoformat() / f"{fid}.md", _note(fid, session))
    return out


def ingest_turns(root: Path, sessions: list[Session]) -> Ingested:
    """Write transcripts and one note per user turn for ``sessions`` (not indexed yet)."""
    out = Ingested()
    for session in sessions:
        fid = _transcript(root, session, out)
        for i, turn in enumerate(session.turns):
            if turn.role == "user" and turn.content.strip():
                _write(root / "turns" / fid / f"{i + 1}.md", _turn_note(fid, session, i))
    return out


def _transcript(root: Path, session: Session, out: Ingested) -> str:
    """``sessions/<fid>.jsonl``, one line per turn (line n is turn n); returns the file id.
    Only role and content go in: ``has_answer`` is the turn label."""
    transcript = out.claim(session.id)
    fid = file_id(session.id)
    lines = [
        json.dumps({"role": t.role, "content": t.content}, ensure_ascii=False)
        for t in session.turns
    ]
    _write(root / transcript, "\n".join(lines) + "\n")
    out.turn_of_line[transcript] = {i + 1: i for i in range(len(session.turns))}
    return fid


def ingest_memory(
    reme: Reme, sessions: list[Session], pipeline: str = "auto_memory", dream: bool = False
) -> Ingested:
    """Run ``pipeline`` once per session, in time order; then ``dream`` when asked."""
    out = Ingested()
    for session in sessions:
        transcript = out.claim(session.id)
        fid = file_id(session.id)
        messages = [
            {
                "role": t.role,
                "content": t.content,
                # Distinct times keep two identical turns of one session two transcript lines.
                "timestamp": (session.date + dt.timedelta(seconds=i)).isoformat(),
            }
            for i, t in enumerate(session.turns)
            if t.content.strip()
        ]
        result = reme.run(
            pipeline,
            {"session_id": fid, "messages": messages, "date": session.date.date().isoformat()},
        )
        out.runs.append(result.model_dump(mode="json", include={"pipeline", "usage", "seconds"}))
        out.turn_of_line[transcript] = align(reme.root / transcript, session)
    if dream:
        result = reme.run("dream", {})
        out.runs.append(result.model_dump(mode="json", include={"pipeline", "usage", "seconds"}))
    return out


def align(path: Path, session: Session) -> dict[int, int]:
    """Transcript line -> upstream turn index, matching contents in order (auto_memory may drop
    empty turns and redacts secrets, so line numbers cannot be assumed)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return {}
    mapping: dict[int, int] = {}
    next_turn = 0
    for number, raw in enumerate(lines, start=1):
        try:
            content = str(json.loads(raw).get("content", "")).strip()
        except (ValueError, AttributeError):
            continue
        for index in range(next_turn, len(session.turns)):
            if session.turns[index].content.strip() == content:
                mapping[number] = index
                next_turn = index + 1
                break
        else:  # changed in saving (redacted): take the next non-empty turn
            while next_turn < len(session.turns) and not session.turns[next_turn].content.strip():
                next_turn += 1
            if next_turn < len(session.turns):
                mapping[number] = next_turn
                next_turn += 1
    return mapping


def _note(fid: str, session: Session) -> str:
    when = session.date.strftime("%Y/%m/%d (%a) %H:%M")
    first = next((t.content for t in session.turns if t.role == "user"), "")
    description = " ".join(first.split())[:160]
    front = {  # no upstream id anywhere: see the module docstring
        "name": f"Chat session {fid}",
        "description": description,
        "date": session.date.date().isoformat(),
        "session_id": fid,
        "source": f"sessions/{fid}.jsonl",
    }
    head = "\n".join(f"{k}: {json.dumps(v, ensure_ascii=False)}" for k, v in front.items())
    paragraphs = [
        f"{anchor_link(fid, i + 1)} {t.content.strip()}"
        for i, t in enumerate(session.turns)
        if t.role == "user" and t.content.strip()
    ]
    return f"---\n{head}\n---\n# Chat on {when}\n\n" + "\n\n".join(paragraphs) + "\n"


def _turn_note(fid: str, session: Session, index: int) -> str:
    """One user turn: its anchor and text, as upstream's turn document (the turn's content).
    No ``name`` or heading: the chunker would prefix it to the chunk and so to the indexed text."""
    front = {
        "date": session.date.date().isoformat(),
        "session_id": fid,
        "source": f"sessions/{fid}.jsonl",
    }
    head = "\n".join(f"{k}: {json.dumps(v, ensure_ascii=False)}" for k, v in front.items())
    text = session.turns[index].content.strip()
    return f"---\n{head}\n---\n{anchor_link(fid, index + 1)} {text}\n"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
