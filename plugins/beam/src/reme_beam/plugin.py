"""The reme entry point of reme-beam: its steps and its `reme bench beam` commands."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reme_core import hookimpl


@hookimpl
def register_steps(register: Callable[[type], None]) -> None:
    """``beam_answer`` (bounded search-and-answer loop) and ``beam_judge`` (rubric judge)."""
    from reme_beam.answer import BeamAnswerStep
    from reme_beam.judge import BeamJudgeStep

    register(BeamAnswerStep)
    register(BeamJudgeStep)


@hookimpl
def register_commands(register: Callable[..., Any]) -> None:
    """``reme bench beam run|compare``."""
    from reme_beam.cli import beam_group

    register(beam_group, group="bench")
