"""The ``beam_answer`` step: answer a question from the workspace with a bounded search loop.

The question itself is the first search (no model call needed for it). Then each model call
either asks for one more search or answers; the last allowed call must answer. So a question
costs at most ``max_calls`` model calls and ``max_calls`` searches, whatever the model does.

Params: ``question``. Adds ``answer``, ``searches`` (the queries run, in order), ``calls``
(model calls made) and ``hits`` (``{path, start_line, end_line}`` of every result shown).
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, Field

from reme_beam.retrieval import SEARCH_PIPELINE, PipelineSearch
from reme_core.api import ComponentSettings, ConfigError, SearchHit, Step, load_prompts

PROMPTS = ("reme_beam", "beam")


class NextMove(BaseModel):
    """One reply of the loop: a further search, or the answer."""

    search: str | None = Field(
        None, description="A new memory search query, only when the results so far miss something."
    )
    answer: str | None = Field(None, description="The final answer, when the results suffice.")


class FinalAnswer(BaseModel):
    answer: str = Field(description="The final answer to the question.")


class BeamAnswerSettings(ComponentSettings):
    max_calls: int = Field(4, ge=1, le=20)
    """Model calls per question, the answering one included (so searches after the first are
    at most ``max_calls - 1``)."""
    limit: int = Field(10, ge=1, le=50)
    """Results per search."""
    max_hit_chars: int = Field(1500, ge=100)
    """Text of each result shown to the model, cut to this."""
    search_pipeline: str = SEARCH_PIPELINE
    """The pipeline whose steps search (``search``: the one being benchmarked)."""


class BeamAnswerStep(Step):
    name: ClassVar[str] = "beam_answer"
    Settings = BeamAnswerSettings
    settings: BeamAnswerSettings

    def run(self, run: Any, state: dict[str, Any]) -> dict[str, Any]:
        question = state.get("question")
        if not isinstance(question, str) or not question.strip():
            raise ConfigError("beam_answer needs a `question` param (text)")
        llm = run.require_llm("beam_answer")
        prompts = load_prompts(*PROMPTS, "en")
        search = PipelineSearch(run.reme, self.settings.search_pipeline)
        try:
            shown: dict[str, SearchHit] = {}
            searches = [question]
            self._add(shown, search.search(question, self.settings.limit).hits)
            answer = ""
            calls = 0
            while calls < self.settings.max_calls:
                left = self.settings.max_calls - calls - 1
                results = self._render(prompts, shown.values())
                system = prompts.render("answer_system")
                if left == 0:
                    user = prompts.render("answer_final", question=question, results=results)
                    messages = [
                        {"role": "system", "content": system},
                        {"role": "user", "content": user},
                    ]
                    calls += 1
                    answer = llm.structured(messages, FinalAnswer).answer
                    break
                user = prompts.render(
                    "answer_user", question=question, results=results, left=str(left)
                )
                messages = [
                    {"role": "system", "content": system},
                    {"role": "user", "content": user},
                ]
                calls += 1
                move = llm.structured(messages, NextMove)
                query = (move.search or "").strip()
                if move.answer and move.answer.strip() and not query:
                    answer = move.answer.strip()
                    break
                if not query:  # neither: the next call is the forced answer
                    calls = self.settings.max_calls - 1
                    continue
                searches.append(query)
                self._add(shown, search.search(query, self.settings.limit).hits)
        finally:
            search.close()
        return {
            "answer": answer,
            "searches": searches,
            "calls": calls,
            "hits": [
                {"path": h.path, "start_line": h.start_line, "end_line": h.end_line}
                for h in shown.values()
            ],
        }

    @staticmethod
    def _add(shown: dict[str, SearchHit], hits: list[SearchHit]) -> None:
        for hit in hits:
            shown.setdefault(hit.chunk_id, hit)

    def _render(self, prompts: Any, hits: Any) -> str:
        parts = []
        for rank, hit in enumerate(hits, start=1):
            text = hit.text
            if len(text) > self.settings.max_hit_chars:
                text = text[: self.settings.max_hit_chars].rstrip() + " …"
            parts.append(
                prompts.render(
                    "answer_result",
                    rank=rank,
                    path=hit.path,
                    start_line=hit.start_line,
                    end_line=hit.end_line,
                    text=text,
                ).rstrip("\n")
            )
        return "\n\n".join(parts) if parts else prompts.render("answer_none")
