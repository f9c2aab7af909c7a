"""One BEAM item, start to finish: a conversation into a fresh workspace, then every question.

``score_conversation`` is the runner's worker (``reme_core.bench.run_items``): a top-level
function taking plain data, so it pickles into a spawned process, which builds its own plugins
(``load_plugins()``) and workspace. Ingestion happens once per conversation; every probing
question of every ability is then asked against that one workspace.

Per question: the configured search pipeline's hits for the question, as many as it takes to
show the largest message budget (``fetch_messages``), mapped to the BEAM message ids they show
(``HitMap``), give the retrieval metrics, and the BM25 floor over single messages
(``floor.MessageBm25``) ranks the same question for ``bm25_recall@<k>msg`` beside them; with ``qa``, the ``beam_answer`` and ``beam_judge``
pipelines (configured ones, else the steps with default settings) answer and judge it.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from reme_beam.data import BeamQuestion, load_conversation
from reme_beam.floor import MessageBm25, floor_metrics
from reme_beam.hitmap import HitMap
from reme_beam.ingest import Mode, ingest, run_steps
from reme_beam.metrics import KS, hits_within, retrieval_metrics
from reme_beam.retrieval import PipelineSearch, fetch_messages
from reme_beam.sessions import SessionUnit, build_sessions
from reme_beam.usage import add, snapshot, spent
from reme_core.api import Reme, Settings, init_workspace, load_plugins
from reme_core.api import harvest_vector_cache as harvest
from reme_core.api import seed_vector_cache as seed


class RunOptions(BaseModel):
    """What every item of a run shares; plain data, so it crosses into worker processes."""

    settings: dict[str, Any]
    """The effective reme settings (``Settings.model_dump(mode="json")``)."""
    mode: Mode = "raw"
    dream: bool = False
    session_unit: SessionUnit = "batch"
    ks: tuple[int, ...] = KS
    """Message budgets: the metrics are taken at each number of messages shown."""
    qa: bool = False
    keep_dir: str | None = None
    """Keep each item's workspace under this folder (debugging); None = delete it."""
    vector_cache: str | None = None
    """A SQLite file of embeddings shared by items and runs (``reme_core.bench.vector_cache``)."""


class QuestionRow(BaseModel):
    qid: str
    ability: str
    question: str
    evidence: list[str]
    evidence_groups: dict[str, list[str]] = Field(default_factory=dict)
    evidence_ranks: dict[str, int | None] = Field(default_factory=dict)
    """Per evidence id, the rank of the first hit showing it (None: not in the hits)."""
    metrics: dict[str, float] = Field(default_factory=dict)
    top_hits: list[dict[str, Any]] = Field(default_factory=list)
    """The hits read within the largest budget, in rank order (path, lines, message ids): what
    every figure of the row is computed from."""
    bm25_top_ids: list[str] = Field(default_factory=list)
    """The floor's first messages (as many as the largest budget), best first."""
    search_seconds: float = 0.0
    answer: str | None = None
    reference: str | None = None
    searches: list[str] = Field(default_factory=list)
    judge: dict[str, Any] | None = None
    usage: dict[str, int] = Field(default_factory=dict)


def score_conversation(item: dict[str, Any], options: RunOptions) -> dict[str, Any]:
    """The runner row of one conversation: ``item`` is ``{"id", "folder"}``."""
    started = time.perf_counter()
    conversation = load_conversation(Path(item["folder"]), item_id=str(item["id"]))
    sessions = build_sessions(conversation, options.session_unit)
    settings = Settings.model_validate(options.settings)
    temp = Path(tempfile.mkdtemp(prefix="reme-beam-"))
    root = temp / "workspace"
    try:
        init_workspace(root)
        if options.vector_cache:
            seed(root, Path(options.vector_cache))
        reme = Reme(settings.model_copy(update={"workspace": root}), load_plugins())
        try:
            report = ingest(reme, sessions, options.mode, options.dream)
            hitmap = HitMap.build(root)
            floor = MessageBm25(conversation.messages())
            search = PipelineSearch(reme)
            try:
                rows = [
                    _question(reme, search, hitmap, floor, q, options)
                    for q in conversation.questions
                ]
            finally:
                search.close()
            search_steps = search.step_names
        finally:
            reme.close()
        if options.vector_cache:
            harvest(root, Path(options.vector_cache))
        if options.keep_dir:
            target = Path(options.keep_dir) / str(item["id"]).replace("/", "_")
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(root, target)
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    usage = report.usage
    for row in rows:
        usage = add(usage, row.usage)
    return {
        "category": "conversation",
        "chat_file": str(conversation.chat_file),
        "sessions": len(sessions),
        "messages": sum(len(s.messages) for s in sessions),
        "search_steps": search_steps,
        "ingest": report.model_dump(mode="json"),
        "questions": [row.model_dump(mode="json") for row in rows],
        "usage": usage,
        "seconds": time.perf_counter() - started,
    }


def _question(
    reme: Reme,
    search: PipelineSearch,
    hitmap: HitMap,
    floor: MessageBm25,
    question: BeamQuestion,
    options: RunOptions,
) -> QuestionRow:
    evidence = question.evidence
    floor_ids = floor.rank(question.question, max(options.ks))
    t0 = time.perf_counter()
    hits, hit_ids = fetch_messages(search, question.question, max(options.ks), hitmap.hit_ids)
    seconds = time.perf_counter() - t0
    read = hits_within(hit_ids, max(options.ks))
    row = QuestionRow(
        qid=question.qid,
        ability=question.ability,
        question=question.question,
        evidence=list(evidence.ids),
        evidence_groups={k: list(v) for k, v in evidence.groups.items()},
        evidence_ranks={e: _first_rank(hit_ids, e) for e in evidence.ids},
        metrics={
            **retrieval_metrics(hit_ids, evidence.ids, options.ks),
            **floor_metrics(floor_ids, evidence.ids, options.ks),
        },
        top_hits=[
            {"path": h.path, "lines": [h.start_line, h.end_line], "ids": list(ids)}
            for h, ids in list(zip(hits, hit_ids, strict=True))[:read]
        ],
        bm25_top_ids=floor_ids,
        search_seconds=seconds,
        reference=question.reference or None,
    )
    if options.qa:
        _answer_and_judge(reme, question, row)
    return row


def _answer_and_judge(reme: Reme, question: BeamQuestion, row: QuestionRow) -> None:
    models = [reme.llm_for("beam_answer"), reme.llm_for("beam_judge")]
    before = snapshot(models)
    answered = run_steps(
        reme,
        "beam_answer",
        {"question": question.question},
        models[0],
        default_steps=["beam_answer"],
    )
    row.answer = str(answered.get("answer") or "")
    row.searches = list(answered.get("searches") or [])
    judged = run_steps(
        reme,
        "beam_judge",
        {
            "question": question.question,
            "ability": question.ability,
            "rubric": list(question.rubric),
            "answer": row.answer,
        },
        models[1],
        default_steps=["beam_judge"],
    )
    row.judge = judged.get("judge")
    if row.judge and row.judge.get("score") is not None:
        row.metrics["judge"] = float(row.judge["score"])
    ordering = (row.judge or {}).get("ordering")
    if ordering:
        row.metrics["ordering"] = float(ordering["final_score"])
        row.metrics["tau_norm"] = float(ordering["tau_norm"])
    row.usage = spent(before, snapshot(models))


def _first_rank(hit_ids: list[tuple[str, ...]], ident: str) -> int | None:
    return next((rank for rank, ids in enumerate(hit_ids, start=1) if ident in ids), None)
