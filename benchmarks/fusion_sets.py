"""The dev sets fusion is tuned on, as each arm's ranking per question, cached on disk.

Ranking every question once per arm is the slow part (indexing, embedding); fusing those
rankings is instant. ``load_sets`` builds the rankings a set lacks and keeps them as JSON under
``cache`` (one file per set and embedding), so trying a fusion lever over every set takes seconds.
Embeddings travel between the throwaway workspaces through reme_core.bench.vector_cache.

A row: ``arms`` (arm -> ``[chunk id, score]`` best first, 200 candidates), ``answers`` (the
evidence: notes, sessions or turns), ``owner`` (chunk id -> the unit it belongs to), ``group``
(a category, for per-category figures) and ``metric``: ``share`` (the share of the evidence in
the first k units; for one answer it is recall@k) or ``all`` (1 when all of it is there).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import conversations  # noqa: E402

from reme_core.bench import vector_cache  # noqa: E402

DATA = HERE.parent.parent / "shared" / "data"
CANDIDATES = 200
SHARED_VECTORS = Path.home() / ".cache" / "reme" / "bench-vectors.sqlite3"

Row = dict[str, Any]


def _open(root: Path, embedding: str):  # type: ignore[no-untyped-def]
    from reme_core.runtime import Reme

    vector_cache.seed(root, SHARED_VECTORS)
    overrides = ["components.file_store.name=local", f"components.embedding.name={embedding}"]
    return Reme.open(root, overrides=overrides, env={})


def _rank(reme, question: str, units: dict[str, str]) -> tuple[dict, dict]:  # type: ignore[no-untyped-def]
    """Each arm's ranking of ``question``, and chunk id -> unit (via the note's stem)."""
    arms = reme.searcher.rank_arms(question, CANDIDATES)
    ids = [cid for hits in arms.values() for cid, _ in hits]
    owner = {
        cid: units[Path(chunk.path).stem]
        for cid, chunk in reme.catalog.chunks(ids).items()
        if Path(chunk.path).stem in units
    }
    return {arm: [[cid, round(s, 6)] for cid, s in hits] for arm, hits in arms.items()}, owner


def _synthetic(generate: Callable[[Path, int, int], list], notes: int, embedding: str) -> dict:
    work = Path(tempfile.mkdtemp(prefix="reme-fusion-"))
    try:
        facts = generate(work, notes, 0)
        units = {Path(p).stem: str(p.relative_to(work)) for p in work.rglob("*.md")}
        keyword, paraphrase = [], []
        with _open(work, embedding) as reme:
            reme.index()
            for fact in facts:
                for out, question in ((keyword, fact.query), (paraphrase, fact.paraphrase)):
                    if question:
                        arms, owner = _rank(reme, question, units)
                        out.append(
                            _row(question, arms, [fact.answer_path], owner, fact.kind, "share")
                        )
        vector_cache.harvest(work, SHARED_VECTORS)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"keyword": keyword, "paraphrase": paraphrase}


def _row(
    question: str, arms: dict, answers: list[str], owner: dict, group: str, metric: str
) -> Row:
    return {
        "question": question,
        "arms": arms,
        "answers": answers,
        "owner": owner,
        "group": group,
        "metric": metric,
    }


def _conversations(chats: list, embedding: str, context: bool) -> list[Row]:
    rows: list[Row] = []
    for chat in chats:
        work = Path(tempfile.mkdtemp(prefix="reme-fusion-chat-"))
        try:
            units = conversations.write_turns(chat, work, context=context)
            with _open(work, embedding) as reme:
                reme.index()
                for q in chat.questions:
                    arms, owner = _rank(reme, q.question, units)
                    rows.append(
                        _row(q.question, arms, sorted(q.evidence), owner, q.category, "share")
                    )
            vector_cache.harvest(work, SHARED_VECTORS)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        print(
            f"  {chat.name}: {len(chat.turns)} turns, {len(chat.questions)} questions", flush=True
        )
    return rows


def _lme(path: Path, embedding: str, turns: bool, limit: int | None) -> list[Row]:
    from fusion import write_turns as lme_turns
    from longmemeval import load, skipped, write_sessions

    rows: list[Row] = []
    items = [item for item in load(path) if not skipped(item)][:limit]
    started = time.perf_counter()
    for number, item in enumerate(items, start=1):
        work = Path(tempfile.mkdtemp(prefix="reme-fusion-lme-"))
        try:
            if turns:
                units, answers = lme_turns(item, work)
            else:
                units, answers = write_sessions(item, work), set(item["answer_session_ids"])
            if not answers:
                continue
            with _open(work, embedding) as reme:
                reme.index()
                arms, owner = _rank(reme, item["question"], units)
            vector_cache.harvest(work, SHARED_VECTORS)
            rows.append(
                _row(item["question"], arms, sorted(answers), owner, item["question_type"], "all")
            )
        finally:
            shutil.rmtree(work, ignore_errors=True)
        if number % 10 == 0:
            print(f"  LongMemEval {number}/{len(items)} ({time.perf_counter() - started:.0f} s)")
    return rows


def builders(notes: int, embedding: str, lme_limit: int | None) -> dict[str, Callable[[], Any]]:
    """Set name -> a function that ranks it (a synthetic builder makes two sets at once)."""
    from synthetic import generate_workspace
    from synthetic_entities import generate

    lme = DATA / "longmemeval" / "longmemeval_s_dev50.json.gz"
    locomo = list(conversations.locomo(DATA / "locomo" / "locomo_dev2.json"))
    realtalk = list(conversations.realtalk(DATA / "realtalk"))
    return {
        "synthetic": lambda: _synthetic(generate_workspace, notes, embedding),
        "entities": lambda: _synthetic(generate, notes, embedding),
        "locomo": lambda: _conversations(locomo, embedding, context=False),
        "locomo+context": lambda: _conversations(locomo, embedding, context=True),
        "realtalk": lambda: _conversations(realtalk, embedding, context=False),
        "realtalk+context": lambda: _conversations(realtalk, embedding, context=True),
        "lme-sessions": lambda: _lme(lme, embedding, False, lme_limit),
        "lme-turns": lambda: _lme(lme, embedding, True, lme_limit),
    }


def load_sets(
    names: list[str],
    cache: Path,
    *,
    notes: int = 1000,
    embedding: str = "e5-onnx",
    lme_limit: int | None = None,
) -> dict[str, list[Row]]:
    """Each named set's rows, from ``cache`` or built now (and cached)."""
    cache.mkdir(parents=True, exist_ok=True)
    make = builders(notes, embedding, lme_limit)
    sets: dict[str, list[Row]] = {}
    for name in names:
        file = cache / f"{name}.{embedding}.json"
        if not file.is_file():
            started = time.perf_counter()
            print(f"ranking {name} ...", flush=True)
            built = make[name]()
            parts = built if isinstance(built, dict) else {"": built}
            for part, rows in parts.items():
                label = f"{name}-{part}" if part else name
                (cache / f"{label}.{embedding}.json").write_text(json.dumps(rows), "utf-8")
            if isinstance(built, dict):
                file.write_text(json.dumps({"parts": list(parts)}), "utf-8")
            print(f"ranked {name} in {time.perf_counter() - started:.0f} s", flush=True)
        data = json.loads(file.read_text("utf-8"))
        if isinstance(data, dict):
            for part in data["parts"]:
                label = f"{name}-{part}"
                sets[label] = json.loads((cache / f"{label}.{embedding}.json").read_text("utf-8"))
        else:
            sets[name] = data
    return sets
