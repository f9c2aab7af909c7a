"""One conversation, start to finish, in a worker process: its turns into a fresh workspace, one
note each, then every question searched through the configured ``search`` pipeline and ranked by
the BM25 floor too.

``score_conversation`` is the runner's worker (``reme_core.bench.run_items``): a top-level
function of plain data, so it pickles into a spawned process, which builds its own plugins
(``load_plugins()``) and workspace. The search pipeline's steps run in-process, without
``Reme.run``: a question changes no file, so there is no history to record.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from reme_core.api import MAX_SEARCH_LIMIT as MAX_LIMIT
from reme_core.api import (
    PipelineRun,
    Reme,
    SearchResponse,
    Settings,
    evidence_recall,
    load_plugins,
    resolve_component,
)
from reme_core.api import harvest_vector_cache as harvest
from reme_core.api import seed_vector_cache as seed
from reme_locomo.baseline import TurnBm25
from reme_locomo.data import Conversation, Question, load_file
from reme_locomo.ingest import Ingested, ingest, turn_text

KS: tuple[int, ...] = (5, 10, 20)
FLOOR = "bm25_"
"""Prefix of the floor's metrics (``bm25_recall@10``) beside reme's (``recall@10``)."""


class RunOptions(BaseModel):
    """What every conversation of a run shares; plain data, so it crosses into workers."""

    settings: dict[str, Any]
    """The effective reme settings (``Settings.model_dump(mode="json")``)."""
    ks: tuple[int, ...] = KS
    vector_cache: str | None = None
    """A SQLite file of embeddings shared by conversations and configs."""


def score_conversation(item: dict[str, Any], options: RunOptions) -> dict[str, Any]:
    """The runner row of one conversation: ``item`` is ``{"id", "file"}``."""
    started = time.perf_counter()
    conversation = _load(Path(item["file"]), str(item["id"]))
    settings = Settings.model_validate(options.settings)
    root = Path(tempfile.mkdtemp(prefix="reme-locomo-"))
    try:
        if options.vector_cache:
            seed(root, Path(options.vector_cache))
        with Reme(settings.model_copy(update={"workspace": root}), load_plugins()) as reme:
            ingested = ingest(root, conversation)
            reme.index()
            search = TurnSearch(reme, ingested)
            ranked = {q.qid: search(q.question, max(options.ks)) for q in conversation.questions}
            steps = search.step_names
            search.close()
        if options.vector_cache:  # only after a clean close
            harvest(root, Path(options.vector_cache))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    by_id = {t.dia_id: t for t in conversation.turns}
    floor = TurnBm25(ingested.turns, [turn_text(by_id[t]) for t in ingested.turns])
    questions = [
        question_row(q, ranked[q.qid], floor.rank(q.question, max(options.ks)), options.ks)
        for q in conversation.questions
    ]
    return {
        "category": "conversation",
        "format": conversation.format,
        "file": conversation.file,
        "turns": len(conversation.turns),
        "notes": len(ingested.turn_of),
        "search_steps": steps,
        "questions": questions,
        "seconds": time.perf_counter() - started,
    }


def question_row(
    question: Question, turns: list[str], floor: list[str], ks: tuple[int, ...]
) -> dict[str, Any]:
    """One question's row: its metrics (none without evidence) and both rankings' top turns."""
    metrics: dict[str, float] = {}
    if question.evidence:
        for k in ks:
            metrics[f"recall@{k}"] = evidence_recall(turns, question.evidence, k)
        for k in ks:
            metrics[f"{FLOOR}recall@{k}"] = evidence_recall(floor, question.evidence, k)
    return {
        "qid": question.qid,
        "category": question.category,
        "question": question.question,
        "evidence": question.evidence,
        "missing_evidence": question.missing_evidence,
        "evidence_ranks": {e: _rank(turns, e) for e in question.evidence},
        "metrics": metrics,
        "top_turns": turns[: max(ks)],
        "bm25_top_turns": floor[: max(ks)],
    }


class TurnSearch:
    """``search(question, k)`` -> at least ``k`` distinct turn ids when the search has them."""

    def __init__(self, reme: Reme, ingested: Ingested, pipeline: str = "search"):
        self.ingested = ingested
        self.run = PipelineRun(reme=reme, name=pipeline, llm=None)
        self.steps = []
        for i, selection in enumerate(reme.settings.pipelines[pipeline].steps):
            cls, step_settings = resolve_component(
                reme.plugins, "step", selection, f"pipelines.{pipeline}.steps[{i}]"
            )
            self.steps.append(cls(step_settings, reme.context))

    @property
    def step_names(self) -> list[str]:
        return [step.name for step in self.steps]

    def __call__(self, query: str, k: int) -> list[str]:
        # A long turn may fill several chunks: ask for more hits until k turns show, the search
        # runs out or the limit reaches the search's maximum.
        limit = min(2 * k, MAX_LIMIT)
        while True:
            hits = self._hits(query, limit)
            turns = list(
                dict.fromkeys(
                    self.ingested.turn_of[h["path"]]
                    for h in hits
                    if h["path"] in self.ingested.turn_of
                )
            )
            if len(turns) >= k or len(hits) < limit or limit >= MAX_LIMIT:
                return turns
            limit = min(2 * limit, MAX_LIMIT)

    def _hits(self, query: str, limit: int) -> list[dict[str, Any]]:
        if not query.strip():
            return []
        state: dict[str, Any] = {"query": query, "limit": limit, "expand": False}
        for step in self.steps:
            state.update(step.run(self.run, state) or {})
        response = state.get("search")
        if response is None:
            raise RuntimeError(f"pipeline search ({', '.join(self.step_names)}) gave no result")
        if not isinstance(response, SearchResponse):
            response = SearchResponse.model_validate(response)
        return [{"path": h.path} for h in response.hits]

    def close(self) -> None:
        for step in self.steps:
            step.close()


def _load(path: Path, cid: str) -> Conversation:
    for conversation in load_file(path):
        if conversation.id == cid:
            return conversation
    raise ValueError(f"{path}: no conversation {cid!r}")


def _rank(ranked: list[str], dia_id: str) -> int | None:
    return ranked.index(dia_id) + 1 if dia_id in ranked else None
