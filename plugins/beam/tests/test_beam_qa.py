"""The answering loop and the rubric judge, with fake models (no network)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest
from beam_testing import KEYWORD_ONLY, FakeLlm
from pydantic import ValidationError
from reme_beam.answer import BeamAnswerStep
from reme_beam.ingest import run_steps
from reme_beam.judge import BeamJudgeStep, Verdict, fill

from reme_core.components import ModelT
from reme_core.errors import ConfigError
from reme_core.pipelines.run import PipelineRun
from reme_core.plugins import Plugins
from reme_core.runtime import Reme
from reme_core.workspace import init_workspace


class Curious(FakeLlm):
    """Always wants one more search; judges everything half right; never sees the same event."""

    name: ClassVar[str] = "curious"

    def complete(self, messages: Sequence[dict[str, str]], *, max_tokens: int | None = None) -> str:
        self.usage.calls += 1
        return "NO"

    def structured(
        self, messages: Sequence[dict[str, str]], response_model: type[ModelT], **_: Any
    ) -> ModelT:
        self.usage.calls += 1
        self.prompts.append(messages[-1]["content"])
        data = {
            "NextMove": {"search": f"query {self.usage.calls}"},
            "FinalAnswer": {"answer": "final"},
            "Verdict": {"score": 0.5, "reason": "partly"},
        }[response_model.__name__]
        return response_model.model_validate(data)

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.prompts: list[str] = []


@pytest.fixture
def reme(tmp_path: Path, beam_plugins: Plugins) -> Reme:
    root = tmp_path / "ws"
    init_workspace(root)
    opened = Reme.open(root, overrides=KEYWORD_ONLY, env={}, plugins=beam_plugins)
    opened.files.write("daily/2024-03-15/plan.md", "# Plan\n\nThe first sprint ends on March 29.\n")
    yield opened
    opened.close()


def test_the_loop_is_bounded_and_the_last_call_must_answer(reme: Reme) -> None:
    llm = Curious()
    step = BeamAnswerStep(BeamAnswerStep.Settings(max_calls=3, limit=2))
    out = step.run(PipelineRun(reme=reme, name="beam_answer", llm=llm), {"question": "sprint end"})
    assert out["calls"] == 3 and llm.usage.calls == 3
    assert out["answer"] == "final"
    assert out["searches"] == ["sprint end", "query 1", "query 2"]
    assert "March 29" in llm.prompts[0] and "Searches left: 2" in llm.prompts[0]
    assert "No searches are left" in llm.prompts[-1]
    assert out["hits"][0]["path"] == "daily/2024-03-15/plan.md"


def test_an_answer_ends_the_loop_at_once(reme: Reme) -> None:
    llm = FakeLlm()
    out = BeamAnswerStep().run(
        PipelineRun(reme=reme, name="beam_answer", llm=llm), {"question": "When does it end?"}
    )
    assert out["calls"] == 1 and out["answer"].startswith("Core functionality")


def test_answering_needs_a_model_and_a_question(reme: Reme) -> None:
    with pytest.raises(ConfigError, match="needs a model"):
        BeamAnswerStep().run(
            PipelineRun(reme=reme, name="beam_answer", llm=None), {"question": "q"}
        )
    with pytest.raises(ConfigError, match="question"):
        BeamAnswerStep().run(PipelineRun(reme=reme, name="beam_answer", llm=FakeLlm()), {})


def test_the_judge_averages_rubric_items_and_scores_order(reme: Reme) -> None:
    llm = Curious()
    state = {
        "question": "In what order?",
        "ability": "event_ordering",
        "rubric": ["Core", "Security"],
        "answer": "1. Security hardening\n2. Core setup",
    }
    judge = BeamJudgeStep().run(PipelineRun(reme=reme, name="beam_judge", llm=llm), state)["judge"]
    assert judge["score"] == 0.5 and [i["score"] for i in judge["items"]] == [0.5, 0.5]
    # The model matched no line to a reference item: nothing in common, F1 0.
    assert judge["ordering"]["f1"] == 0.0 and judge["ordering"]["final_score"] == 0.0
    # One YES/NO call per (line, reference item) pair tried, plus one per rubric item.
    assert llm.usage.calls == 2 + 4
    assert "RUBRIC CRITERION to check: Core" in llm.prompts[0]
    assert "RESPONSE to grade: 1. Security hardening\n2. Core setup" in llm.prompts[0]


def test_a_prompt_file_of_ones_own_and_the_fill_order(tmp_path: Path, reme: Reme) -> None:
    assert fill("<rubric_item>|<llm_response>|<question>", "Q", "R", "A <rubric_item>") == (
        "R|A <rubric_item>|Q"
    )
    own = tmp_path / "judge.txt"
    own.write_text("Rubric: <rubric_item>\nResponse: <llm_response>\n")
    llm = Curious()
    step = BeamJudgeStep(BeamJudgeStep.Settings(prompt_file=str(own)))
    state = {"question": "q", "ability": "information_extraction", "rubric": ["r1"], "answer": "a"}
    step.run(PipelineRun(reme=reme, name="beam_judge", llm=llm), state)
    assert llm.prompts == ["Rubric: r1\nResponse: a\n"]
    own.write_text("no slots")
    with pytest.raises(ConfigError, match="<rubric_item>"):
        step.run(PipelineRun(reme=reme, name="beam_judge", llm=llm), state)


def test_verdicts_are_one_of_three_scores() -> None:
    assert Verdict(score=0.5, reason="x").score == 0.5
    with pytest.raises(ValidationError, match=r"1\.0, 0\.5 or 0\.0"):
        Verdict(score=0.7, reason="x")


def test_unconfigured_pipelines_run_their_default_step(reme: Reme) -> None:
    out = run_steps(
        reme,
        "beam_judge",
        {"question": "q", "rubric": ["r"], "answer": "a"},
        FakeLlm(),
        default_steps=["beam_judge"],
    )
    assert out["judge"]["score"] == 1.0
    with pytest.raises(ConfigError, match="not configured"):
        run_steps(reme, "beam_judge", {}, FakeLlm())
