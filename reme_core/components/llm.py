"""Contracts of the language-model side: the chat model with its usage accounting, and the
tokenizer that counts tokens for context budgets (with the tokenizer-free estimate)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TypeVar

from pydantic import BaseModel

from reme_core.components.base import Component, ComponentContext, ComponentSettings


class Tokenizer(Component, ABC):
    """Counts tokens the way a model family does, for context budgets (``reme_core.light``).

    ``count`` is called for every message on every budget check, so it must be fast and must
    work offline; load any vocabulary lazily, on the first call.
    """

    @property
    @abstractmethod
    def model_id(self) -> str:
        """Names the counting scheme, e.g. ``estimate/o200k_base`` or ``bpe_openai/cl100k_base``."""

    @property
    def exact(self) -> bool:
        """True when counts are the model's own tokenizer, False for an estimate."""
        return False

    @abstractmethod
    def count(self, text: str) -> int:
        """Tokens in ``text`` (0 for the empty string)."""

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each text; a backend with a batch API may override this."""
        return [self.count(text) for text in texts]


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate: about 4 characters per token, one per CJK character."""
    cjk = sum(1 for ch in text if "\u2e80" <= ch <= "\u9fff" or "\uac00" <= ch <= "\ud7af")
    return cjk + (len(text) - cjk + 3) // 4


class LlmUsage(BaseModel):
    """Calls and tokens spent, for the per-run accounting every pipeline result reports."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    retries: int = 0

    def add(self, other: LlmUsage) -> None:
        self.calls += other.calls
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.retries += other.retries

    def since(self, before: LlmUsage) -> LlmUsage:
        """What was spent between ``before`` (a copy taken earlier) and now."""
        return LlmUsage(
            calls=self.calls - before.calls,
            prompt_tokens=self.prompt_tokens - before.prompt_tokens,
            completion_tokens=self.completion_tokens - before.completion_tokens,
            retries=self.retries - before.retries,
        )


ModelT = TypeVar("ModelT", bound=BaseModel)


class Llm(Component, ABC):
    """A chat model. Messages are ``{"role": "system" | "user" | "assistant", "content": str}``.

    Every call adds to ``usage``. Failures (HTTP errors after retries, timeouts, output that never
    validates) raise ``LlmError`` so the caller can leave its work pending and retry later.
    """

    def __init__(
        self, settings: ComponentSettings | None = None, context: ComponentContext | None = None
    ):
        super().__init__(settings, context)
        self.usage = LlmUsage()

    @property
    @abstractmethod
    def model_id(self) -> str:
        """Names the model and endpoint, for results and caches."""

    @abstractmethod
    def complete(self, messages: Sequence[dict[str, str]], *, max_tokens: int | None = None) -> str:
        """Free-text answer."""

    @abstractmethod
    def structured(
        self,
        messages: Sequence[dict[str, str]],
        response_model: type[ModelT],
        *,
        max_retries: int | None = None,
    ) -> ModelT:
        """An answer validated into ``response_model``; invalid output is retried with the error."""
