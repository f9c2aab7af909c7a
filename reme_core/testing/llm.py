"""Conformance suite for ``Llm`` implementations.

Use it from a plugin's tests by subclassing, overriding the ``llm`` fixture and ``script``::

    class TestMyLlm(LlmConformance):
        @pytest.fixture
        def llm(self):
            return MyLlm(MyLlm.Settings(...))

        def script(self, llm, responses):
            ...  # make the next calls answer with these texts, in order

Each scripted response is the raw text the model answers with (for ``structured`` calls too:
valid or invalid JSON). ``script`` is called before the first call of a test. The model must
allow at least one validation retry by default (``max_validation_retries`` >= 1).
"""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field

from reme_core.components import Llm, LlmUsage
from reme_core.errors import LlmError


class Person(BaseModel):
    name: str
    age: int = Field(ge=0)


MESSAGES = [
    {"role": "system", "content": "You answer briefly."},
    {"role": "user", "content": "Who wrote the first program? Give name and age at the time."},
]
VALID = '{"name": "Ada Lovelace", "age": 27}'
INVALID = '{"name": "Ada Lovelace", "age": "unknown"}'


class LlmConformance:
    """Behaviour every ``Llm`` must show. Override ``llm`` and ``script``."""

    @pytest.fixture
    def llm(self) -> Llm:
        raise NotImplementedError("override the llm fixture")

    def script(self, llm: Llm, responses: list[str]) -> None:
        raise NotImplementedError("override script() to queue the next responses")

    def test_model_id_is_a_nonempty_string(self, llm: Llm) -> None:
        assert isinstance(llm.model_id, str) and llm.model_id

    def test_usage_starts_at_zero(self, llm: Llm) -> None:
        assert llm.usage == LlmUsage()

    def test_complete_returns_the_text(self, llm: Llm) -> None:
        self.script(llm, ["Ada Lovelace."])
        assert llm.complete(MESSAGES) == "Ada Lovelace."

    def test_complete_counts_usage(self, llm: Llm) -> None:
        self.script(llm, ["first", "second answer"])
        llm.complete(MESSAGES)
        after_one = llm.usage.model_copy()
        assert after_one.calls == 1
        assert after_one.prompt_tokens > 0 and after_one.completion_tokens > 0
        llm.complete(MESSAGES, max_tokens=20)
        assert llm.usage.calls == 2
        assert llm.usage.prompt_tokens > after_one.prompt_tokens
        assert llm.usage.completion_tokens > after_one.completion_tokens
        assert llm.usage.retries == 0

    def test_structured_validates_into_the_model(self, llm: Llm) -> None:
        self.script(llm, [VALID])
        person = llm.structured(MESSAGES, Person)
        assert person == Person(name="Ada Lovelace", age=27)
        assert llm.usage.calls == 1 and llm.usage.retries == 0

    def test_invalid_output_is_retried(self, llm: Llm) -> None:
        self.script(llm, [INVALID, VALID])
        assert llm.structured(MESSAGES, Person).age == 27
        assert llm.usage.calls == 2
        assert llm.usage.retries == 1

    def test_output_that_never_validates_is_an_llm_error(self, llm: Llm) -> None:
        self.script(llm, [INVALID, "not json at all", INVALID])
        with pytest.raises(LlmError):
            llm.structured(MESSAGES, Person, max_retries=2)
        assert llm.usage.calls == 3
        assert llm.usage.retries == 2

    def test_max_retries_zero_fails_on_the_first_invalid_answer(self, llm: Llm) -> None:
        self.script(llm, [INVALID, VALID])
        with pytest.raises(LlmError):
            llm.structured(MESSAGES, Person, max_retries=0)
        assert llm.usage.calls == 1
