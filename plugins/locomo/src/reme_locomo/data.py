"""LoCoMo and REALTALK in their upstream formats -> conversations of turns and questions.

- LoCoMo (``locomo10.json``, or a subset such as ``locomo_dev2.json``): a JSON list of samples;
  ``conversation`` holds ``speaker_a``, ``speaker_b``, ``session_N`` (turns ``{speaker, dia_id,
  text, blip_caption?}``) and ``session_N_date_time`` ("1:56 pm on 8 May, 2023"); ``qa`` is a list
  of ``{question, answer | adversarial_answer, evidence, category}``.
- REALTALK (``data/Chat_*.json``): one chat per file; ``session_N`` turns carry ``clean_text``
  (else ``text``) and their own ``date_time`` ("29.12.2023, 22:42:04"); ``qa`` as LoCoMo.

``DATA`` is one such file or a folder of them (every ``*.json`` / ``*.json.gz`` in it). Evidence
ids are normalised to ``D<session>:<turn>``: upstream writes some as ``D:3:12``, some lists as one
string joined by ``;`` or ``.``. Evidence naming a turn the conversation does not hold (REALTALK
dropped turns when it cleaned the chats but kept the ids) is set aside per question
(``missing_evidence``): no ranking can find it, so it is not counted against any.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

Format = Literal["locomo", "realtalk"]

CATEGORIES: dict[Format, dict[int, str]] = {
    "locomo": {
        1: "multi-hop",
        2: "temporal",
        3: "open-domain",
        4: "single-hop",
        5: "adversarial",
    },
    "realtalk": {1: "multi-hop", 2: "temporal", 3: "commonsense"},
}
"""Upstream's category numbers, named as the data README names them."""

_SESSION = re.compile(r"session_(\d+)")
_EVIDENCE = re.compile(r"D:?\s*(\d+)\s*:\s*(\d+)")
_DATE_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%d.%m.%Y, %H:%M:%S")


class DataError(ValueError):
    """The file is not LoCoMo or REALTALK as upstream ships it."""


class Turn(BaseModel):
    dia_id: str
    """``D<session>:<n>``, as the evidence names it."""
    session: int
    speaker: str
    text: str
    caption: str | None = None
    """The shared image's caption (upstream's ``blip_caption``), when the turn shared one."""
    when: dt.datetime | None = None
    """The turn's time (REALTALK) or its session's (LoCoMo); None when upstream's is unreadable."""


class Question(BaseModel):
    qid: str
    """``<conversation>/q<n>``, n from 1 in upstream order."""
    question: str
    category: str
    evidence: list[str]
    """Normalised evidence turn ids the conversation holds."""
    missing_evidence: list[str] = Field(default_factory=list)
    """Evidence ids naming no turn of the conversation (set aside, see the module doc)."""


class Conversation(BaseModel):
    id: str
    format: Format
    file: str
    turns: list[Turn]
    questions: list[Question]


def dataset_files(data: Path) -> list[Path]:
    """The files ``data`` names: itself, or a folder's ``*.json`` / ``*.json.gz`` in name order."""
    if data.is_file():
        return [data]
    if not data.is_dir():
        raise DataError(f"{data}: no such file or folder")
    files = sorted(
        p for p in data.iterdir() if p.is_file() and p.name.endswith((".json", ".json.gz"))
    )
    if not files:
        raise DataError(
            f"{data}: no .json files (expected locomo10.json or REALTALK's Chat_*.json)"
        )
    return files


def load_conversations(data: Path) -> list[Conversation]:
    """Every conversation of ``data`` (a file or a folder), in file then upstream order."""
    out: list[Conversation] = []
    for path in dataset_files(data):
        out.extend(load_file(path))
    seen: set[str] = set()
    for conv in out:
        if conv.id in seen:
            raise DataError(f"{data}: conversation {conv.id!r} appears twice")
        seen.add(conv.id)
    return out


def load_file(path: Path) -> list[Conversation]:
    """One upstream file: a LoCoMo list of samples, or one REALTALK chat."""
    try:
        opener = gzip.open if path.name.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as handle:
            raw = json.load(handle)
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: not readable JSON ({exc})") from None
    if isinstance(raw, list):
        return [_locomo(path, i, sample) for i, sample in enumerate(raw)]
    if isinstance(raw, dict) and "qa" in raw and any(_SESSION.fullmatch(k) for k in raw):
        return [_realtalk(path, raw)]
    raise DataError(
        f"{path}: neither LoCoMo (a list of samples with `conversation` and `qa`) nor a "
        "REALTALK chat (an object with `session_N` lists and `qa`)"
    )


def normalise_evidence(value: Any) -> list[str]:
    """``["D1:3", "D:3:12", "D8:6; D9:17"]`` -> ``["D1:3", "D3:12", "D8:6", "D9:17"]`` (no repeats)."""
    items = value if isinstance(value, list) else [value]
    found: list[str] = []
    for item in items:
        if isinstance(item, list):
            found.extend(normalise_evidence(item))
            continue
        for session, turn in _EVIDENCE.findall(str(item)):
            found.append(f"D{int(session)}:{int(turn)}")
    return list(dict.fromkeys(found))


def parse_when(text: Any) -> dt.datetime | None:
    """Upstream's date strings ("1:56 pm on 8 May, 2023", "29.12.2023, 22:42:04"), else None."""
    if not isinstance(text, str):
        return None
    cleaned = " ".join(text.split())
    for fmt in _DATE_FORMATS:
        try:
            return dt.datetime.strptime(cleaned, fmt)
        except ValueError:
            continue
    return None


# -- internals ---------------------------------------------------------------------------------


def _locomo(path: Path, index: int, sample: Any) -> Conversation:
    where = f"{path}: sample {index}"
    if not isinstance(sample, dict) or not isinstance(sample.get("conversation"), dict):
        raise DataError(f"{where}: no `conversation` object (is this LoCoMo's locomo10.json?)")
    conv = sample["conversation"]
    cid = str(sample.get("sample_id") or f"{path.stem}-{index}")
    turns: list[Turn] = []
    for number, key in _sessions(conv):
        when = parse_when(conv.get(f"{key}_date_time"))
        for j, raw in enumerate(conv[key]):
            turns.append(_turn(raw, number, when, f"{where} {key}[{j}]", text_keys=("text",)))
    questions = _questions(cid, "locomo", sample.get("qa"), turns, where)
    return Conversation(id=cid, format="locomo", file=str(path), turns=turns, questions=questions)


def _realtalk(path: Path, chat: dict[str, Any]) -> Conversation:
    cid = path.name.removesuffix(".gz").removesuffix(".json")
    turns: list[Turn] = []
    for number, key in _sessions(chat):
        session_when = parse_when(chat.get(f"{key}_date_time"))
        for j, raw in enumerate(chat[key]):
            when = parse_when(raw.get("date_time")) if isinstance(raw, dict) else None
            turns.append(
                _turn(
                    raw,
                    number,
                    when or session_when,
                    f"{path}: {key}[{j}]",
                    text_keys=("clean_text", "text"),
                )
            )
    questions = _questions(cid, "realtalk", chat.get("qa"), turns, str(path))
    return Conversation(id=cid, format="realtalk", file=str(path), turns=turns, questions=questions)


def _sessions(data: dict[str, Any]) -> list[tuple[int, str]]:
    found = []
    for key, value in data.items():
        match = _SESSION.fullmatch(key)
        if match and isinstance(value, list):
            found.append((int(match.group(1)), key))
    return sorted(found)


def _turn(
    raw: Any, session: int, when: dt.datetime | None, where: str, text_keys: tuple[str, ...]
) -> Turn:
    if not isinstance(raw, dict) or "dia_id" not in raw:
        raise DataError(f"{where}: a turn is an object with `dia_id`, `speaker` and text")
    ids = normalise_evidence(raw["dia_id"])
    if len(ids) != 1:
        raise DataError(f"{where}: dia_id {raw['dia_id']!r} is not like D3:12")
    text = next((raw[k] for k in text_keys if isinstance(raw.get(k), str)), "")
    caption = raw.get("blip_caption")
    return Turn(
        dia_id=ids[0],
        session=session,
        speaker=str(raw.get("speaker") or "").strip() or "someone",
        text=text.strip(),
        caption=caption.strip() if isinstance(caption, str) and caption.strip() else None,
        when=when,
    )


def _questions(cid: str, fmt: Format, qa: Any, turns: list[Turn], where: str) -> list[Question]:
    if not isinstance(qa, list):
        raise DataError(f"{where}: no `qa` list")
    held = {t.dia_id for t in turns}
    names = CATEGORIES[fmt]
    out = []
    for n, item in enumerate(qa, start=1):
        if not isinstance(item, dict) or not isinstance(item.get("question"), str):
            raise DataError(f"{where}: qa[{n - 1}] has no `question` text")
        evidence = normalise_evidence(item.get("evidence") or [])
        category = item.get("category")
        label = names.get(category, str(category)) if isinstance(category, int) else str(category)
        out.append(
            Question(
                qid=f"{cid}/q{n}",
                question=item["question"],
                category=label,
                evidence=[e for e in evidence if e in held],
                missing_evidence=[e for e in evidence if e not in held],
            )
        )
    return out
