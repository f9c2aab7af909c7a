"""Scores one LongMemEval question in a fresh workspace (runs in a worker process).

``score_item`` is the top-level function ``reme_core.bench.run_items`` calls; its options are
bound with ``functools.partial`` (``Options`` pickles; the settings travel as plain data).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from reme_core.api import LME_KS, Llm, LlmUsage, Reme, retrieval_metrics
from reme_lme import qa
from reme_lme.anchors import SpanResolver
from reme_lme.data import Item, ItemRef
from reme_lme.evidence import Evidence, evidence
from reme_lme.ingest import Ingested, ingest_memory, ingest_raw
from reme_lme.ranking import rank
from reme_lme.searcher import Searcher
from reme_lme.turn_level import rank_turns
from reme_lme.workspace import fresh_workspace


class Options(BaseModel):
    """How each question is run; the same for every item of a run."""

    config: dict[str, Any]
    """The effective settings (``Settings.model_dump(mode="json")``), secrets included."""
    mode: Literal["raw", "memory"] = "raw"
    memory_pipeline: str = "auto_memory"
    dream: bool = False
    search_pipeline: str = "search"
    """The pipeline whose steps answer queries (its step is ``search`` or ``search_v2``)."""
    search_limit: int = Field(200, ge=1, le=200)
    """Results asked for per query (the metrics cut them at each k)."""
    ks: list[int] = Field(default_factory=lambda: list(LME_KS))
    qa: bool = False
    max_answer_calls: int = Field(4, ge=1)
    vector_cache: str | None = None
    """A SQLite file of embeddings shared by questions and runs (``reme_core.bench.vector_cache``):
    LongMemEval haystacks share sessions, and configs of a comparison embed the same chunks."""


def score_item(item: Item | ItemRef, options: Options) -> dict[str, Any]:
    """One question: ingest, search with the question, metrics; with ``qa``, answer and judge.

    A run passes an ``ItemRef``: the question is read here, from the split cache. Sessions are
    ranked in the session workspace; in raw mode turns are ranked in a second one holding one
    note per user turn (``turn_level``), as the official turn granularity does. In memory mode
    there is no turn corpus: turns are those the memory notes' hits anchor to, best hit first.
    """
    if isinstance(item, ItemRef):
        item = item.load()
    sessions, later = item.sessions()
    wanted = evidence(item, sessions)
    with fresh_workspace(options.config, options.vector_cache) as reme:
        if options.mode == "raw":
            ingested = ingest_raw(reme.root, sessions)
        else:
            ingested = ingest_memory(reme, sessions, options.memory_pipeline, dream=options.dream)
        reme.index()
        searcher = Searcher(reme, options.search_pipeline, options.search_limit)
        session_rank, turn_rank = rank(
            searcher(item.question), SpanResolver.for_folder(reme.root), ingested
        )
        row: dict[str, Any] = {}
        if options.qa:
            row.update(_qa(reme, item, ingested, searcher, options))
        row["usage"] = _usage([reme.llm, reme.llm_for(options.memory_pipeline)])
    scored = wanted.skip is None
    if options.mode == "raw":
        # Only when scored: the turn workspace is a second index (and embedding) per question.
        turn_rank = (
            rank_turns(
                item.question,
                sessions,
                config=options.config,
                pipeline=options.search_pipeline,
                limit=options.search_limit,
                vector_cache=options.vector_cache,
            )
            if scored and wanted.turns
            else []
        )
    turn_corpus = set(wanted.turn_corpus)
    turn_rank = [t for t in turn_rank if t in turn_corpus]
    metrics = _metrics(session_rank, turn_rank, wanted, options.ks)
    if options.qa:
        metrics["qa_accuracy"] = float(row["correct"])
    return {
        "category": item.question_type,
        "metrics": metrics,
        "skip": wanted.skip,
        "sessions": len(sessions),
        "sessions_after_question": later,
        "evidence": wanted.sessions,
        "top_sessions": session_rank[:10],
        "top_turns": turn_rank[:10],
        **row,
    }


def _metrics(
    session_rank: list[str], turn_rank: list[str], wanted: Evidence, ks: list[int]
) -> dict[str, float]:
    """The official metrics of one question: none when it is skipped, no ``turn_*`` without
    turn labels."""
    if wanted.skip is not None:
        return {}
    metrics = retrieval_metrics(
        session_rank, wanted.sessions, wanted.session_corpus, ks, "session_"
    )
    if wanted.turns:
        metrics.update(retrieval_metrics(turn_rank, wanted.turns, wanted.turn_corpus, ks, "turn_"))
    return metrics


def _qa(
    reme: Reme, item: Item, ingested: Ingested, searcher: Searcher, options: Options
) -> dict[str, Any]:
    llm = reme.llm
    if llm is None:
        raise ValueError("--qa needs a model: set components.llm")
    when = {s.id: s.date.strftime("%Y/%m/%d (%a) %H:%M") for s in item.sessions()[0]}
    dates = {path: when.get(sid, "") for path, sid in ingested.session_of.items()}

    def search(query: str) -> str:
        hits = searcher(query, limit=10, seen_key=item.question_id)
        return qa.render_hits(hits, dates)

    result = qa.answer(llm, item.question, item.question_date, search, options.max_answer_calls)
    prompt = qa.judge_prompt(
        item.question_type, item.question, item.answer, result.answer, item.abstention
    )
    correct, verdict = qa.judge(llm, prompt)
    return {
        "answer": result.answer,
        "searches": result.searches,
        "correct": correct,
        "verdict": verdict,
    }


def _usage(models: list[Llm | None]) -> dict[str, int]:
    total = LlmUsage()
    hits = 0
    for model in {id(m): m for m in models if m is not None}.values():
        total.add(model.usage)
        hits += int(getattr(model, "cache_hits", 0))
    return {
        "calls": total.calls,
        "prompt_tokens": total.prompt_tokens,
        "completion_tokens": total.completion_tokens,
        "cache_hits": hits,
    }
