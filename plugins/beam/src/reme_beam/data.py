"""BEAM's upstream files, read as they are published (``chats/<size>/<n>/``).

A conversation folder holds ``chat.json`` (a list of batches ``{batch_number, time_anchor?,
turns: [[{role, content, id, time_anchor?, ...}, ...], ...]}``) and
``probing_questions/probing_questions.json`` (ability -> list of questions). Either file may be
gzipped (``.json.gz``). Where upstream ships ``chat_trunecated.json`` (sic) its own answer
generation reads that instead of ``chat.json``, so the questions were written against it; we do
the same.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from reme_beam.evidence import Evidence, normalise_evidence
from reme_core.api import RemeError

ABILITIES: tuple[str, ...] = (
    "abstention",
    "contradiction_resolution",
    "event_ordering",
    "information_extraction",
    "instruction_following",
    "knowledge_update",
    "multi_session_reasoning",
    "preference_following",
    "summarization",
    "temporal_reasoning",
)
"""The ten memory abilities BEAM probes, in upstream's order."""

CHAT_FILES = ("chat_trunecated.json", "chat.json")
QUESTIONS_FILE = "probing_questions/probing_questions.json"

# Upstream appends the plan position to some user turns (" ->-> 1,1"): generator bookkeeping,
# not something the user said, so it is dropped before the text reaches a workspace.
_MARKER = re.compile(r"\s*->->\s*[\d,\s]*$")


class BeamDataError(RemeError):
    """A BEAM file is missing or not in the upstream format."""


class BeamMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: int | str
    role: str
    content: str
    time_anchor: str | None = None

    @property
    def key(self) -> str:
        """The id as evidence refers to it (``source_chat_ids`` mixes ints and strings)."""
        return str(self.id).strip()

    @property
    def text(self) -> str:
        return _MARKER.sub("", self.content)


class BeamBatch(BaseModel):
    model_config = ConfigDict(extra="ignore")

    batch_number: int | None = None
    time_anchor: str | None = None
    turns: list[list[BeamMessage]] = Field(default_factory=list)


class BeamQuestion(BaseModel):
    """One probing question; upstream's other keys (answer, ideal_response, ...) are kept."""

    model_config = ConfigDict(extra="allow")

    ability: str
    index: int
    question: str
    rubric: list[str] = Field(default_factory=list)
    source_chat_ids: Any = None

    @property
    def qid(self) -> str:
        return f"{self.ability}:{self.index}"

    @property
    def evidence(self) -> Evidence:
        return normalise_evidence(self.source_chat_ids)

    @property
    def reference(self) -> str:
        """The reference answer, whichever key this ability names it by."""
        extra = self.model_extra or {}
        for key in ("answer", "ideal_answer", "ideal_response", "ideal_summary"):
            if isinstance(extra.get(key), str):
                return extra[key]
        return ""


class Conversation(BaseModel):
    """One BEAM item: a conversation and every probing question asked about it."""

    id: str
    folder: Path
    chat_file: Path
    questions_file: Path
    batches: list[BeamBatch]
    questions: list[BeamQuestion]

    def messages(self) -> list[BeamMessage]:
        return [m for batch in self.batches for turn in batch.turns for m in turn]


def read_json(path: Path) -> Any:
    """A ``.json`` or ``.json.gz`` file."""
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as handle:
            return json.load(handle)
    except FileNotFoundError:
        raise BeamDataError(f"{path} does not exist") from None
    except (OSError, ValueError) as exc:
        raise BeamDataError(f"{path} is not readable JSON: {exc}") from None


def find_file(folder: Path, names: tuple[str, ...] | str) -> Path | None:
    """The first of ``names`` present in ``folder``, plain or gzipped."""
    for name in (names,) if isinstance(names, str) else names:
        for candidate in (folder / name, folder / f"{name}.gz"):
            if candidate.is_file():
                return candidate
    return None


def is_conversation(folder: Path) -> bool:
    return folder.is_dir() and find_file(folder, CHAT_FILES) is not None


def discover(data_dir: Path) -> list[Path]:
    """Conversation folders under ``data_dir`` (``chats/<size>``), or ``data_dir`` itself when
    it is one; numbered folders sort by number, as upstream does."""
    data_dir = Path(data_dir).expanduser()
    if not data_dir.is_dir():
        raise BeamDataError(f"{data_dir} is not a folder (expected chats/<size> or one chat)")
    if is_conversation(data_dir):
        return [data_dir]
    found = [p for p in data_dir.iterdir() if is_conversation(p)]
    if not found:
        raise BeamDataError(
            f"no BEAM conversation under {data_dir}: expected folders holding chat.json and "
            f"{QUESTIONS_FILE}"
        )
    return sorted(found, key=_folder_order)


def _folder_order(path: Path) -> tuple[int, int, str]:
    return (0, int(path.name), "") if path.name.isdigit() else (1, 0, path.name)


def load_conversation(folder: Path, item_id: str | None = None) -> Conversation:
    folder = Path(folder)
    chat_file = find_file(folder, CHAT_FILES)
    questions_file = find_file(folder, QUESTIONS_FILE)
    if chat_file is None:
        raise BeamDataError(f"{folder}: no chat.json (or chat.json.gz)")
    if questions_file is None:
        raise BeamDataError(f"{folder}: no {QUESTIONS_FILE} (or .gz)")
    return Conversation(
        id=item_id or folder.name,
        folder=folder,
        chat_file=chat_file,
        questions_file=questions_file,
        batches=parse_batches(read_json(chat_file), chat_file),
        questions=parse_questions(read_json(questions_file), questions_file),
    )


def parse_batches(data: Any, source: Path | str = "chat.json") -> list[BeamBatch]:
    """Every batch in document order. Batches are the objects with a ``turns`` list, found at
    any depth, so a layout that groups batches (as the 10M files group them by plan) reads too."""
    found: list[Any] = []
    _collect_batches(data, found)
    if not found:
        raise BeamDataError(f"{source}: no batches (objects with a `turns` list)")
    try:
        return [BeamBatch.model_validate(b) for b in found]
    except ValidationError as exc:
        raise BeamDataError(f"{source}: not a BEAM chat: {_first_error(exc)}") from None


def _collect_batches(node: Any, found: list[Any]) -> None:
    if isinstance(node, dict):
        if isinstance(node.get("turns"), list):
            found.append(node)
            return
        for value in node.values():
            _collect_batches(value, found)
    elif isinstance(node, list):
        for value in node:
            _collect_batches(value, found)


def parse_questions(data: Any, source: Path | str = QUESTIONS_FILE) -> list[BeamQuestion]:
    if not isinstance(data, dict):
        raise BeamDataError(f"{source}: expected an object mapping ability -> questions")
    questions: list[BeamQuestion] = []
    for ability, items in data.items():
        if not isinstance(items, list):
            raise BeamDataError(f"{source}: {ability!r} is not a list of questions")
        for index, item in enumerate(items):
            if not isinstance(item, dict):
                raise BeamDataError(f"{source}: {ability}[{index}] is not an object")
            try:
                questions.append(
                    BeamQuestion.model_validate({**item, "ability": ability, "index": index})
                )
            except ValidationError as exc:
                raise BeamDataError(f"{source}: {ability}[{index}]: {_first_error(exc)}") from None
    return questions


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(p) for p in error["loc"])
    return f"{where}: {error['msg']}" if where else error["msg"]
