"""The ``beam_judge`` step: BEAM's rubric judge, and the event-ordering score.

Every ability is judged the same way upstream judges it: one model call per rubric item, each
scored 0, 0.5 or 1, the question's score being their mean (abstention questions included: their
rubric checks that the answer declines). Two differences from upstream's code, both on purpose:
scores are read as numbers (upstream's ``int(score)`` turns a 0.5 into 0 for every ability but
event ordering), and the verdict comes back as a validated structure rather than parsed JSON.

Event ordering also gets upstream's order score (``reme_beam.ordering``): answer lines matched to
the rubric items by the model (a YES/NO call per pair tried), then Kendall tau-b x F1.

Params: ``question``, ``ability``, ``rubric`` (list of text), ``answer``. Adds ``judge``:
``{score, items: [{rubric, score, reason}], ordering?: {precision, recall, f1, tau_norm,
final_score}}``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, Field, field_validator

from reme_beam.ordering import align, answer_lines, ordering_score
from reme_core.api import ComponentSettings, ConfigError, Llm, Step, load_prompts

PROMPTS = ("reme_beam", "beam")
JUDGE_SLOTS = ("<rubric_item>", "<llm_response>")


class Verdict(BaseModel):
    score: float = Field(description="1.0, 0.5 or 0.0")
    reason: str = Field(description="Why the criterion is or is not met.")

    @field_validator("score")
    @classmethod
    def _three_levels(cls, value: float) -> float:
        if value not in (0.0, 0.5, 1.0):
            raise ValueError("score must be exactly 1.0, 0.5 or 0.0")
        return value


class BeamJudgeSettings(ComponentSettings):
    prompt_file: str | None = None
    """A judge prompt of one's own (e.g. upstream's ``unified_llm_judge_base_prompt``) with the
    placeholders ``<rubric_item>`` and ``<llm_response>`` (and optionally ``<question>``);
    None = the shipped prompt."""
    ordering: bool = True
    """Score event-ordering answers by order too (extra YES/NO calls)."""
    max_ordering_lines: int = Field(30, ge=1)
    """Answer lines matched at most (each may cost one call per rubric item)."""


class BeamJudgeStep(Step):
    name: ClassVar[str] = "beam_judge"
    Settings = BeamJudgeSettings
    settings: BeamJudgeSettings

    def run(self, run: Any, state: dict[str, Any]) -> dict[str, Any]:
        question = _text(state, "question")
        answer = state.get("answer") if isinstance(state.get("answer"), str) else ""
        rubric = state.get("rubric")
        if not isinstance(rubric, list) or not all(isinstance(r, str) for r in rubric):
            raise ConfigError("beam_judge needs `rubric`: a list of text")
        llm = run.require_llm("beam_judge")
        prompts = load_prompts(*PROMPTS, "en").templates
        template = self._template(prompts["judge"])
        items = [judge_item(llm, template, question, item, answer) for item in rubric]
        result: dict[str, Any] = {
            "score": sum(i["score"] for i in items) / len(items) if items else None,
            "items": items,
        }
        if self.settings.ordering and state.get("ability") == "event_ordering" and rubric:
            lines = answer_lines(answer)[: self.settings.max_ordering_lines]
            same_prompt = prompts["same_event"]
            aligned = align(
                rubric, lines, lambda ref, line: same_event(llm, same_prompt, ref, line)
            )
            result["ordering"] = ordering_score(rubric, aligned).model_dump()
        return {"judge": result}

    def _template(self, shipped: str) -> str:
        if self.settings.prompt_file is None:
            return shipped
        path = Path(self.settings.prompt_file).expanduser()
        try:
            text = path.read_text("utf-8")
        except OSError as exc:
            raise ConfigError(f"beam_judge prompt_file {path}: {exc}") from None
        missing = [slot for slot in JUDGE_SLOTS if slot not in text]
        if missing:
            raise ConfigError(f"beam_judge prompt_file {path} lacks {', '.join(missing)}")
        return text


def fill(template: str, question: str, rubric_item: str, response: str) -> str:
    """Upstream's replacement order: the rubric item first, then the response (so a response
    that quotes ``<rubric_item>`` is left alone)."""
    return (
        template.replace("<question>", question)
        .replace("<rubric_item>", rubric_item)
        .replace("<llm_response>", response)
    )


def judge_item(
    llm: Llm, template: str, question: str, rubric_item: str, answer: str
) -> dict[str, Any]:
    prompt = fill(template, question, rubric_item, answer)
    verdict = llm.structured([{"role": "user", "content": prompt}], Verdict)
    return {"rubric": rubric_item, "score": verdict.score, "reason": verdict.reason}


def same_event(llm: Llm, template: str, reference: str, candidate: str) -> bool:
    prompt = template.replace("<reference>", reference).replace("<candidate>", candidate)
    reply = llm.complete([{"role": "user", "content": prompt}], max_tokens=5)
    return "yes" in reply.lower()


def _text(state: dict[str, Any], key: str) -> str:
    value = state.get(key)
    if not isinstance(value, str):
        raise ConfigError(f"beam_judge needs `{key}` (text)")
    return value
