"""auto_memory_lme: auto_memory's code with benchmark defaults and the benchmark hint."""

from __future__ import annotations

from typing import Any

import pytest
from reme_lme.auto_memory_lme import LME_HINT, LmeAutoMemorySettings, LmeAutoMemoryStep

from reme_plugins.auto_memory.request import AutoMemorySettings
from reme_plugins.auto_memory.steps import AutoMemoryStep


def test_defaults_read_and_quote_more_than_auto_memory() -> None:
    base, lme = AutoMemorySettings(), LmeAutoMemorySettings()
    assert lme.excerpt_turns > base.excerpt_turns and lme.excerpt_chars > base.excerpt_chars
    assert lme.max_prompt_tokens > base.max_prompt_tokens
    assert LmeAutoMemoryStep.name == "auto_memory_lme"


@pytest.mark.parametrize(
    ("given", "sent"), [(None, LME_HINT), ("the caller's hint", "the caller's hint")]
)
def test_the_benchmark_hint_applies_unless_the_caller_gives_one(
    monkeypatch: pytest.MonkeyPatch, given: str | None, sent: str
) -> None:
    seen: dict[str, Any] = {}

    def fake_run(self: AutoMemoryStep, run: Any, state: dict[str, Any]) -> dict[str, Any]:
        seen.update(state)
        return {}

    monkeypatch.setattr(AutoMemoryStep, "run", fake_run)
    state = {"session_id": "s1", "messages": []}
    if given is not None:
        state["hint"] = given
    LmeAutoMemoryStep(LmeAutoMemorySettings(), None).run(None, state)
    assert seen["hint"] == sent
    assert "hint" not in state or state["hint"] == given  # the caller's state is not changed
