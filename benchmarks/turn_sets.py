"""Conversation dev sets written as text variants, each arm's ranking per question, cached on disk.

benchmarks/turn_levers.py measures contextual chunks and date resolution on these. One note per
turn, as benchmarks/conversations.py writes them (``daily/<day>/<opaque stem>.md``, frontmatter
``date``), but the indexed text varies:

- ``plain``: ``speaker: text`` (what conversations.py and the fusion harness index).
- ``header``: the markdown chunker's ``context_keys: [date]`` (the session day as a line above the
  turn, ``Monday 8 May 2023``), set through the config as a user would.
- ``prev``: the turn it answers (the one before it in its session) quoted above it.
- ``prev-short``: that quote only when the turn is short (chit-chat: ``SHORT_WORDS`` words or
  fewer), where the turn alone says least.
- ``header+prev``: both.

Chunk ids are the same in every variant (same paths, one chunk per note), so one variant's
keyword ranking fuses with another's vector ranking: that measures "context for the embedder
only" without an index that keeps two texts per chunk. A row is fusion_sets' row plus ``as_of``
(the conversation's last day: when its questions are asked) and ``dates`` (unit -> ISO day).
LongMemEval turns and sessions (``lme-turns``: one note per user turn, as benchmarks/fusion.py
writes them; ``lme-sessions``: one per session, as benchmarks/longmemeval.py) come as ``plain``
and ``header`` only; their ``as_of`` is the item's ``question_date``. So do the
synthetic workspace and the planted-entity set (``synthetic-keyword``, ``entities-paraphrase``,
...: notes that are not turns, so no previous turn; ``as_of`` is their latest note's day): the
header lever is a chunker setting and reaches every dated note, not only conversations.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import conversations  # noqa: E402
from fusion_sets import DATA, SHARED_VECTORS, Row, _rank, _row  # noqa: E402

from reme_core.bench import vector_cache  # noqa: E402

VARIANTS = ("plain", "header", "prev", "prev-short", "header+prev")
SHORT_WORDS = 8
HEADER_OVERRIDE = "components.chunkers[.md].settings.context_keys=[date]"


def _open(root: Path, embedding: str, header: bool):  # type: ignore[no-untyped-def]
    from reme_core.runtime import Reme

    vector_cache.seed(root, SHARED_VECTORS)
    overrides = ["components.file_store.name=local", f"components.embedding.name={embedding}"]
    if header:
        overrides.append(HEADER_OVERRIDE)
    return Reme.open(root, overrides=overrides, env={})


def write_variant(chat: conversations.Conversation, root: Path, variant: str) -> dict[str, str]:
    """One note per turn under ``root/daily/<day>/``; note stem -> turn id."""
    owners: dict[str, str] = {}
    previous: conversations.Turn | None = None
    quote = variant in ("prev", "header+prev")
    for turn in chat.turns:
        stem = conversations.note_stem(chat.name, turn.turn_id)
        text = turn.text.strip()
        body = f"{turn.speaker}: {text}"
        short = len(text.split()) <= SHORT_WORDS
        if (
            previous is not None
            and previous.day == turn.day
            and (quote or (variant == "prev-short" and short))
        ):
            body = f"> {previous.speaker}: {previous.text.strip()}\n\n{body}"
        note = root / "daily" / turn.day / f"{stem}.md"
        note.parent.mkdir(parents=True, exist_ok=True)
        note.write_text(f"---\ndate: {turn.day}\n---\n{body}\n", "utf-8")
        owners[stem] = turn.turn_id
        previous = turn
    return owners


def _conversations(chats: list, variant: str, embedding: str) -> list[Row]:
    rows: list[Row] = []
    for chat in chats:
        work = Path(tempfile.mkdtemp(prefix="reme-turns-"))
        try:
            units = write_variant(chat, work, variant)
            dates = {t.turn_id: t.day for t in chat.turns}
            as_of = max(dates.values())
            with _open(work, embedding, header=variant.startswith("header")) as reme:
                reme.index()
                for q in chat.questions:
                    arms, owner = _rank(reme, q.question, units)
                    row = _row(q.question, arms, sorted(q.evidence), owner, q.category, "share")
                    row["as_of"], row["dates"] = as_of, {u: dates[u] for u in set(owner.values())}
                    rows.append(row)
            vector_cache.harvest(work, SHARED_VECTORS)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        print(f"  {chat.name} ({variant}): {len(chat.questions)} questions", flush=True)
    return rows


def _note_day(path: Path) -> str | None:
    """A synthetic note's ``date:`` frontmatter line, as written (ISO)."""
    for line in path.read_text("utf-8").splitlines()[1:]:
        if line.strip() == "---":
            return None
        if line.startswith("date:"):
            return line.split(":", 1)[1].strip().strip('"')
    return None


def _synthetic(name: str, variant: str, embedding: str, notes: int) -> dict[str, list[Row]]:
    """The synthetic workspace (``synthetic``) or planted-entity set (``entities``), both query
    forms; ``header`` indexes every note with its day on top, as the conversations."""
    from synthetic import generate_workspace
    from synthetic_entities import generate

    make = generate_workspace if name == "synthetic" else generate
    work = Path(tempfile.mkdtemp(prefix="reme-turns-syn-"))
    out: dict[str, list[Row]] = {"keyword": [], "paraphrase": []}
    try:
        facts = make(work, notes, 0)
        paths = {p.stem: p for p in work.rglob("*.md")}
        units = {stem: str(p.relative_to(work)) for stem, p in paths.items()}
        days = {units[stem]: _note_day(p) for stem, p in paths.items()}
        as_of = max(d for d in days.values() if d)
        with _open(work, embedding, header=variant == "header") as reme:
            reme.index()
            for fact in facts:
                for part, question in (("keyword", fact.query), ("paraphrase", fact.paraphrase)):
                    if question:
                        arms, owner = _rank(reme, question, units)
                        row = _row(question, arms, [fact.answer_path], owner, fact.kind, "share")
                        row["as_of"] = as_of
                        row["dates"] = {u: days[u] for u in set(owner.values()) if days.get(u)}
                        out[part].append(row)
        vector_cache.harvest(work, SHARED_VECTORS)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def _lme(variant: str, embedding: str, limit: int | None, sessions: bool) -> list[Row]:
    """LongMemEval_S dev: one note per user turn, or (``sessions``) per session."""
    from fusion import write_turns
    from longmemeval import load, skipped, write_sessions

    path = DATA / "longmemeval" / "longmemeval_s_dev50.json.gz"
    rows: list[Row] = []
    items = [item for item in load(path) if not skipped(item)][:limit]
    started = time.perf_counter()
    for number, item in enumerate(items, start=1):
        work = Path(tempfile.mkdtemp(prefix="reme-turns-lme-"))
        try:
            if sessions:
                units, answers = write_sessions(item, work), set(item["answer_session_ids"])
            else:
                units, answers = write_turns(item, work)
            if not answers:
                continue
            days = dict(zip(item["haystack_session_ids"], item["haystack_dates"], strict=True))
            with _open(work, embedding, header=variant == "header") as reme:
                reme.index()
                arms, owner = _rank(reme, item["question"], units)
            vector_cache.harvest(work, SHARED_VECTORS)
            row = _row(item["question"], arms, sorted(answers), owner, item["question_type"], "all")
            row["as_of"] = item["question_date"][:10].replace("/", "-")
            row["dates"] = {
                u: days[u.split("#")[0]][:10].replace("/", "-") for u in set(owner.values())
            }
            rows.append(row)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        if number % 10 == 0:
            print(f"  LongMemEval {number}/{len(items)} ({time.perf_counter() - started:.0f} s)")
    return rows


def load_variant(
    name: str,
    variant: str,
    cache: Path,
    *,
    embedding: str = "e5-onnx",
    lme_limit: int | None = None,
) -> list[Row]:
    """Set ``name`` (locomo, realtalk, lme-turns, synthetic-keyword, entities-paraphrase, ...)
    written as ``variant``, ranked by both arms, cached under ``cache``."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; known: {', '.join(VARIANTS)}")
    cache.mkdir(parents=True, exist_ok=True)
    base, _, part = name.partition("-")
    if base in ("synthetic", "entities"):
        if variant not in ("plain", "header") or part not in ("keyword", "paraphrase"):
            raise ValueError(f"{name!r}: synthetic sets are <set>-keyword|paraphrase, plain|header")
        file = cache / f"{name}.{variant}.{embedding}.json"
        if not file.is_file():
            print(f"ranking {base} as {variant} ...", flush=True)
            for label, rows in _synthetic(base, variant, embedding, 1000).items():
                (cache / f"{base}-{label}.{variant}.{embedding}.json").write_text(
                    json.dumps(rows), "utf-8"
                )
        return json.loads(file.read_text("utf-8"))
    suffix = f".limit{lme_limit}" if name.startswith("lme-") and lme_limit else ""
    file = cache / f"{name}.{variant}{suffix}.{embedding}.json"
    if file.is_file():
        return json.loads(file.read_text("utf-8"))
    started = time.perf_counter()
    print(f"ranking {name} as {variant} ...", flush=True)
    if name == "locomo":
        rows = _conversations(
            list(conversations.locomo(DATA / "locomo" / "locomo_dev2.json")), variant, embedding
        )
    elif name == "realtalk":
        rows = _conversations(list(conversations.realtalk(DATA / "realtalk")), variant, embedding)
    elif name in ("lme-turns", "lme-sessions"):
        if variant not in ("plain", "header"):
            raise ValueError(f"{name} comes as plain or header only")
        rows = _lme(variant, embedding, lme_limit, sessions=name == "lme-sessions")
    else:
        raise ValueError(f"unknown conversation set {name!r}")
    file.write_text(json.dumps(rows), "utf-8")
    print(f"ranked {name} as {variant} in {time.perf_counter() - started:.0f} s", flush=True)
    return rows
