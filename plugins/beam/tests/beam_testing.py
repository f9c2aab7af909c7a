"""Shared test helpers of reme-beam (a module name of its own: `conftest` is taken by reme's
tests, which may be collected in the same session). The plugin manager the tests use is built in
conftest.py with ``reme_core.bench.testing``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from reme_core.components import Llm, ModelT

DATA = Path(__file__).resolve().parent / "data"
TINY = DATA / "chats" / "tiny"

KEYWORD_ONLY = ["components.embedding=null", "components.file_store=null"]


class FakeLlm(Llm):
    """Answers by the kind of call: a fixed answer, a full score, YES for same-event checks."""

    name: ClassVar[str] = "fake"

    @property
    def model_id(self) -> str:
        return "fake"

    def complete(self, messages: Sequence[dict[str, str]], *, max_tokens: int | None = None) -> str:
        self.usage.calls += 1
        return "YES"

    def structured(
        self,
        messages: Sequence[dict[str, str]],
        response_model: type[ModelT],
        *,
        max_retries: int | None = None,
    ) -> ModelT:
        self.usage.calls += 1
        self.usage.prompt_tokens += sum(len(m["content"]) // 4 for m in messages)
        data: dict[str, Any] = {
            "NextMove": {"answer": "Core functionality\nDashboard performance\nSecurity"},
            "FinalAnswer": {"answer": "Core functionality"},
            "Verdict": {"score": 1.0, "reason": "stated"},
            # auto_memory (memory mode): one fact anchored to the batch's first line.
            "NoteDraft": {
                "trivial": False,
                "name": "Session",
                "description": "What was said.",
                "summary": "A session.",
                "facts": [{"text": "The first turn of the batch.", "lines": [1]}],
            },
        }[response_model.__name__]
        return response_model.model_validate(data)
