"""LoCoMo and REALTALK conversations as reme notes, one note per turn, for retrieval benchmarks.

Both datasets (formats: ../shared/data/README.md) are two-person chats in dated sessions, with
questions whose evidence is a list of turn ids (``D3:12``). A turn becomes one note named by an
opaque id (no turn id or evidence marker reaches the indexed text), dated by its session, its
text prefixed by the speaker as a daily note would read. Scoring is turn recall@k: the share of a
question's evidence turns among the first k turns ranked.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

LOCOMO_CATEGORIES = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
REALTALK_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "commonsense"}


@dataclass
class Turn:
    turn_id: str
    speaker: str
    text: str
    day: str
    """The session's date, ISO."""


@dataclass
class Question:
    question: str
    evidence: set[str]
    category: str


@dataclass
class Conversation:
    name: str
    turns: list[Turn] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


def _locomo_date(text: str) -> str:
    # "1:56 pm on 8 May, 2023"
    return dt.datetime.strptime(text.split(" on ", 1)[1].strip(), "%d %B, %Y").date().isoformat()


def _realtalk_date(text: str) -> str:
    # "29.12.2023, 22:42:04"
    return dt.datetime.strptime(text.split(",", 1)[0].strip(), "%d.%m.%Y").date().isoformat()


def _session_keys(record: dict) -> list[str]:
    keys = [k for k in record if re.fullmatch(r"session_\d+", k) and isinstance(record[k], list)]
    return sorted(keys, key=lambda k: int(k.split("_")[1]))


def normalise_evidence(items: list) -> set[str]:
    """Turn ids as ``D3:12``; REALTALK also writes ``D:3:12`` and ``D3:12; D3:14``."""
    found: set[str] = set()
    for item in items:
        for match in re.finditer(r"D:?(\d+):(\d+)", str(item)):
            found.add(f"D{match.group(1)}:{match.group(2)}")
    return found


def locomo(path: Path) -> Iterator[Conversation]:
    for sample in json.loads(path.read_text("utf-8")):
        record = sample["conversation"]
        chat = Conversation(sample.get("sample_id", f"{path.stem}-{len(record)}"))
        for key in _session_keys(record):
            day = _locomo_date(record[f"{key}_date_time"])
            for turn in record[key]:
                text = turn["text"]
                if turn.get("blip_caption"):
                    text += f" [shares a photo: {turn['blip_caption']}]"
                chat.turns.append(Turn(turn["dia_id"], turn["speaker"], text, day))
        for qa in sample["qa"]:
            evidence = normalise_evidence(qa.get("evidence", []))
            if evidence:
                category = LOCOMO_CATEGORIES.get(qa["category"], str(qa["category"]))
                chat.questions.append(Question(qa["question"], evidence, category))
        yield chat


def realtalk(folder: Path) -> Iterator[Conversation]:
    for path in sorted(folder.glob("*.json")):
        record = json.loads(path.read_text("utf-8"))
        chat = Conversation(path.stem)
        for key in _session_keys(record):
            for turn in record[key]:
                text = turn.get("clean_text") or turn.get("text") or ""
                chat.turns.append(
                    Turn(turn["dia_id"], turn["speaker"], text, _realtalk_date(turn["date_time"]))
                )
        for qa in record.get("qa", []):
            evidence = normalise_evidence(qa.get("evidence", []))
            if evidence:
                category = REALTALK_CATEGORIES.get(qa["category"], str(qa["category"]))
                chat.questions.append(Question(qa["question"], evidence, category))
        yield chat


def note_stem(chat: str, turn_id: str) -> str:
    return "t" + hashlib.sha256(f"{chat}/{turn_id}".encode()).hexdigest()[:12]


def write_turns(chat: Conversation, root: Path, context: bool = False) -> dict[str, str]:
    """One note per turn under ``root/daily/<date>/``; returns note stem -> turn id.

    Every note's frontmatter has ``date`` and, when it is not the first of its day,
    ``replying_to: "<speaker>: <text>"`` (the turn before it), as reme-locomo's ingest writes
    it: the default markdown chunker embeds that line above the turn (``vector_context_keys``).
    ``context``: the note's body also quotes the turn it answers, so a reply such as "yes, in
    May" carries what it says yes to in both arms.
    """
    owners: dict[str, str] = {}
    previous: Turn | None = None
    for turn in chat.turns:
        stem = note_stem(chat.name, turn.turn_id)
        body = f"{turn.speaker}: {turn.text.strip()}"
        head = f"date: {turn.day}\n"
        if previous is not None and previous.day == turn.day:
            answered = f"{previous.speaker}: {' '.join(previous.text.split())}"
            head += f"replying_to: {json.dumps(answered, ensure_ascii=False)}\n"
            if context:
                body = f"> {previous.speaker}: {previous.text.strip()}\n\n{body}"
        note = root / "daily" / turn.day / f"{stem}.md"
        note.parent.mkdir(parents=True, exist_ok=True)
        note.write_text(f"---\n{head}---\n{body}\n", "utf-8")
        owners[stem] = turn.turn_id
        previous = turn
    return owners
