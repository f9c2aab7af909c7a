"""Scores one LongMemEval question in a fresh workspace (runs in a worker process).

``score_item`` is the top-level function ``reme_core.bench.run_items`` calls; its options are
bound with ``functools.partial`` (``Options`` pickles; the settings travel as plain data).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from reme_core.bench import LME_KS, retrieval_metrics
from reme_core.bench.vector_cache import harvest, seed
from reme_core.components import Llm, LlmUsage
from reme_core.pipelines.run import PipelineRun
from reme_core.plugins import load_plugins
from reme_core.runtime import Reme
from reme_core.settings import Settings, resolve_component
from reme_lme import qa
from reme_lme.anchors import SpanResolver
from reme_lme.data import Item, ItemRef
from reme_lme.evidence import evidence
from reme_lme.ingest import Ingested, ingest_memory, ingest_raw
from reme_lme.ranking import rank


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

    A run passes an ``ItemRef``: the question is read here, from the split cache.
    """
    if isinstance(item, ItemRef):
        item = item.load()
    sessions, later = item.sessions()
    wanted = evidence(item, sessions)
    root = Path(tempfile.mkdtemp(prefix="reme-lme-"))
    settings = Settings.model_validate(options.config).model_copy(update={"workspace": root})
    try:
        if options.vector_cache:
            seed(root, Path(options.vector_cache))
        with Reme(settings, load_plugins()) as reme:
            if options.mode == "raw":
                ingested = ingest_raw(root, sessions)
            else:
                ingested = ingest_memory(
                    reme, sessions, options.memory_pipeline, dream=options.dream
                )
            reme.index()
            searcher = _Searcher(reme, options.search_pipeline, options.search_limit)
            hits = searcher(item.question)
            session_rank, turn_rank = rank(hits, SpanResolver.for_folder(root), ingested)
            turn_corpus = set(wanted.turn_corpus)
            turn_rank = [t for t in turn_rank if t in turn_corpus]
            metrics: dict[str, float] = {}
            if wanted.skip is None:
                metrics.update(
                    retrieval_metrics(
                        session_rank, wanted.sessions, wanted.session_corpus, options.ks, "session_"
                    )
                )
                if wanted.turns:
                    metrics.update(
                        retrieval_metrics(
                            turn_rank, wanted.turns, wanted.turn_corpus, options.ks, "turn_"
                        )
                    )
            row: dict[str, Any] = {
                "category": item.question_type,
                "metrics": metrics,
                "skip": wanted.skip,
                "sessions": len(sessions),
                "sessions_after_question": later,
                "evidence": wanted.sessions,
                "top_sessions": session_rank[:10],
                "top_turns": turn_rank[:10],
            }
            if options.qa:
                row.update(_qa(reme, item, ingested, searcher, options))
                metrics["qa_accuracy"] = float(row["correct"])
            row["usage"] = _usage([reme.llm, reme.llm_for(options.memory_pipeline)])
        if options.vector_cache:
            harvest(root, Path(options.vector_cache))
        return row
    finally:
        shutil.rmtree(root, ignore_errors=True)


class _Searcher:
    """Runs the search pipeline's steps directly (no history commit per query)."""

    def __init__(self, reme: Reme, pipeline: str, limit: int):
        self.reme = reme
        self.pipeline = pipeline
        self.limit = limit
        self.steps = reme.settings.pipelines[pipeline].steps

    def __call__(self, query: str, **params: Any) -> list[dict[str, Any]]:
        state: dict[str, Any] = {"query": query, "limit": self.limit, "expand": False, **params}
        run = PipelineRun(reme=self.reme, name=self.pipeline, llm=None)
        for i, selection in enumerate(self.steps):
            path = f"pipelines.{self.pipeline}.steps[{i}]"
            cls, settings = resolve_component(self.reme.plugins, "step", selection, path)
            step = cls(settings, self.reme.context)
            try:
                state.update(step.run(run, state))
            finally:
                step.close()
        response = state["search"]
        return [h.model_dump() for h in response.hits]


def _qa(
    reme: Reme, item: Item, ingested: Ingested, searcher: _Searcher, options: Options
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
