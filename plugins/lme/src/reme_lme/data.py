"""LongMemEval files (``longmemeval_s_cleaned.json``, ``_oracle``, ``_m``; ``.json`` or ``.json.gz``)
and what one question's run needs from them.

An upstream item: ``question_id`` (suffix ``_abs`` = abstention), ``question_type``,
``question``, ``answer``, ``question_date`` (``2023/05/30 (Tue) 23:40``), and parallel lists
``haystack_session_ids``, ``haystack_dates``, ``haystack_sessions`` (a session is a list of
``{role, content, has_answer?}``), plus ``answer_session_ids`` (the evidence).

A file is streamed with ``ijson`` (one question in memory at a time; LongMemEval_M is 2.7 GB) and
split once into a cache of one file per question (``split_items``): a run hands its workers a
small ``ItemRef`` each, and every worker reads its own question from the cache.
"""

from __future__ import annotations

import datetime as dt
import functools
import gzip
import hashlib
import json
import os
import re
import shutil
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import ijson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from reme_core.api import dataset_file

try:  # POSIX: one split at a time per cache root; elsewhere concurrent splits are not guarded
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

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
        """Every haystack session in time order (stable for equal times), and how many are dated
        after the question. Those stay: the official retrieval protocol indexes the whole
        haystack (dropping them cost one dev50 question all of its evidence)."""
        asked = self.asked
        sessions = [
            Session(id=sid, date=parse_date(date), turns=turns)
            for sid, date, turns in zip(
                self.haystack_session_ids, self.haystack_dates, self.haystack_sessions, strict=True
            )
        ]
        later = sum(1 for s in sessions if s.date > asked)
        return sorted(sessions, key=lambda s: s.date), later


def parse_date(text: str) -> dt.datetime:
    """``2023/05/30 (Tue) 23:40`` (time optional) -> a naive datetime."""
    found = _DATE.match(text)
    if found is None:
        raise ValueError(f"not a LongMemEval date: {text!r}")
    year, month, day, hour, minute = found.groups()
    return dt.datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0))


class ItemRef(BaseModel):
    """What a worker gets instead of an ``Item``: where its question is in the split cache."""

    question_id: str
    index: int
    """Position in the dataset file (0-based)."""
    path: str
    """The question's file in the split cache."""

    def load(self) -> Item:
        with open(self.path, "rb") as handle:
            text = handle.read()
        try:
            return Item.model_validate_json(text)
        except ValidationError as exc:
            raise ValueError(f"{self.path}: broken split-cache file ({_problems(exc)})") from None


INDEX_FILE = "index.json"
_ITEMS_DIR = "items"
_FORMAT = 1
"""Bumped when the layout changes; ``Item``'s schema is part of the format too (``_format``)."""
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def default_cache_root() -> Path:
    """``$XDG_CACHE_HOME/reme/lme``, else ``~/.cache/reme/lme``."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "reme" / "lme"


def iter_raw(path: str | Path) -> Iterator[dict[str, Any]]:
    """The questions of a LongMemEval file as upstream wrote them, streamed one at a time.

    A file that is not a JSON array of objects is a ``ValueError`` naming the file and where.
    """
    path = Path(path)
    index = -1
    try:
        with _open(path) as handle:
            _expect_array(handle, path)
            for index, raw in enumerate(ijson.items(handle, "item", use_float=True)):
                if not isinstance(raw, dict):
                    raise ValueError(
                        f"{path}: item {index} is {type(raw).__name__}, not a question object"
                    )
                yield raw
    except ijson.JSONError as exc:
        where = f"after item {index}" if index >= 0 else "before the first item"
        raise ValueError(f"{path}: not valid JSON {where}: {_first_line(exc)}") from None
    except (OSError, EOFError, zlib.error) as exc:  # a truncated or corrupt .gz
        raise ValueError(f"{path}: cannot read it: {_first_line(exc)}") from None


def iter_items(path: str | Path) -> Iterator[Item]:
    """Every question of a LongMemEval file, validated, streamed one at a time."""
    for index, raw in enumerate(iter_raw(path)):
        yield _item(raw, path, index)


def load_items(path: str | Path) -> list[Item]:
    """Every question of a LongMemEval file (S, M or oracle; ``.json`` or ``.json.gz``)."""
    return list(iter_items(path))


def split_items(
    path: str | Path, cache_root: str | Path | None = None, *, sha256: str | None = None
) -> list[ItemRef]:
    """One ``ItemRef`` per question of ``path``, in the file's order, splitting it first if the
    cache holds no finished split of these bytes.

    The split lives in ``<cache_root>/<sha256[:16]>/``: ``items/<index>-<question id>.json`` (the
    validated ``Item`` as JSON) and ``index.json``, written last. A folder without a valid index
    (an interrupted split, a malformed file) is removed and split again. ``sha256`` is the file's
    digest when the caller has it (the run manifest does); otherwise it is computed here.
    """
    path = Path(path)
    digest = sha256 or dataset_file(path).sha256
    root = Path(cache_root).expanduser() if cache_root is not None else default_cache_root()
    root = root.resolve()  # workers may start elsewhere
    folder = root / digest[:16]
    refs = _cached(folder, digest)
    if refs is not None:
        return refs
    root.mkdir(parents=True, exist_ok=True)
    with _lock(root / ".lock"):  # one split at a time per cache root
        refs = _cached(folder, digest)  # another process may have split it while we waited
        if refs is None:
            refs = _split(path, folder, digest)
    return refs


# -- internals ---------------------------------------------------------------------------------


def _item(raw: dict[str, Any], source: str | Path, index: int) -> Item:
    # The oracle split has integer answers (counts); answers are compared as text.
    raw = {**raw, "answer": str(raw.get("answer", ""))}
    try:
        return Item.model_validate(raw)
    except ValidationError as exc:
        qid = raw.get("question_id")
        name = f" (question_id {qid!r})" if qid is not None else ""
        raise ValueError(f"{source}: item {index}{name}: {_problems(exc)}") from None


def _problems(exc: ValidationError, shown: int = 5) -> str:
    problems = "; ".join(
        f"{'.'.join(str(p) for p in error['loc']) or '(item)'}: {error['msg']}"
        for error in exc.errors()[:shown]
    )
    more = exc.error_count() - shown
    return problems + (f" (+{more} more)" if more > 0 else "")


@functools.cache
def _format() -> str:
    """The split's format: the layout version and a digest of ``Item``'s schema, so a changed
    ``Item`` never reads files written for the old one."""
    schema = json.dumps(Item.model_json_schema(), sort_keys=True).encode("utf-8")
    return f"{_FORMAT}-{hashlib.sha256(schema).hexdigest()[:12]}"


def _open(path: Path) -> IO[bytes]:
    return gzip.open(path, "rb") if path.suffix == ".gz" else path.open("rb")


def _expect_array(handle: IO[bytes], path: Path) -> None:
    """Fail unless the document opens with ``[`` (ijson would yield nothing for an object)."""
    while True:
        byte = handle.read(1)
        if byte not in (b" ", b"\t", b"\r", b"\n"):
            break
    handle.seek(0)
    if byte != b"[":
        found = "an empty file" if byte == b"" else f"a document starting with {byte!r}"
        raise ValueError(f"{path}: expected a JSON array of LongMemEval questions, found {found}")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _cached(folder: Path, digest: str) -> list[ItemRef] | None:
    """The refs of a finished split in ``folder``, or None if there is none to trust."""
    try:
        index = json.loads((folder / INDEX_FILE).read_bytes())
        if index.get("format") != _format() or index.get("sha256") != digest:
            return None
        refs = [
            ItemRef(question_id=qid, index=i, path=str(folder / _ITEMS_DIR / name))
            for i, (qid, name) in enumerate(zip(index["question_ids"], index["files"], strict=True))
        ]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if not all(os.path.isfile(ref.path) for ref in refs):
        return None
    return refs


def _split(path: Path, folder: Path, digest: str) -> list[ItemRef]:
    """Stream ``path`` into one file per question under ``folder``; the index goes in last."""
    shutil.rmtree(folder, ignore_errors=True)
    items = folder / _ITEMS_DIR
    items.mkdir(parents=True)
    qids: list[str] = []
    names: list[str] = []
    try:
        for index, raw in enumerate(iter_raw(path)):
            item = _item(raw, path, index)  # a bad item fails here, before any run starts
            name = f"{index:06d}-{_UNSAFE.sub('_', item.question_id)[:80]}.json"
            _write(items / name, item.model_dump_json(exclude_defaults=True).encode("utf-8"))
            qids.append(item.question_id)
            names.append(name)
        index_data = {
            "format": _format(),
            "dataset": path.name,
            "sha256": digest,
            "question_ids": qids,
            "files": names,
        }
        _write(folder / INDEX_FILE, json.dumps(index_data, ensure_ascii=False).encode("utf-8"))
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)  # nothing half-written is left to trust
        raise
    return [
        ItemRef(question_id=qid, index=i, path=str(items / name))
        for i, (qid, name) in enumerate(zip(qids, names, strict=True))
    ]


def _write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextmanager
def _lock(path: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``path`` while the block runs (none where fcntl is missing)."""
    if fcntl is None:  # pragma: no cover
        yield
        return
    with path.open("ab") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
