"""Map-reduce summarising under a per-prompt token budget.

A resource that fits one prompt takes one call (``single``). A larger one is cut into parts; each
part is mapped to a partial summary (``map``, one call each); the partials are merged in rounds
(``merge``) until they fit one prompt, and that prompt writes the note (``reduce``). Every prompt
the model receives, system message included, is within ``max_prompt_tokens`` by the same
estimate the usage accounting uses.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field, field_validator

from reme_core.api import (
    ConfigError,
    Llm,
    ModelT,
    Prompts,
    batches,
    estimate_tokens,
    fit,
    joined_tokens,
)
from reme_plugins.auto_resource.readers import ResourceSkipped, ResourceText
from reme_plugins.auto_resource.split import SEPARATOR, pack

# Placeholder values as long as any real one, so a budget computed once holds for every call.
_WIDEST_NUMBER = "999999"
_MIN_CONTENT_TOKENS = 64
MAX_NAME_CHARS = 120
# Estimates round up per piece, so text spliced into a template can cost one token more than
# the template and the text measured apart.
_SPLICE_MARGIN = 2


class PartSummary(BaseModel):
    """What the model says about one part (or several merged parts) of a resource."""

    model_config = ConfigDict(str_strip_whitespace=True)

    summary: str = Field(min_length=1)
    key_points: list[str] = Field(default_factory=list)


class ResourceSummary(BaseModel):
    """The final note content for a resource."""

    model_config = ConfigDict(str_strip_whitespace=True)

    name: str = Field(min_length=1)
    description: str = Field(min_length=1)
    summary: str = Field(min_length=1)
    key_points: list[str] = Field(default_factory=list)

    @field_validator("name", "description")
    @classmethod
    def _one_line(cls, value: str) -> str:
        return " ".join(value.split())

    @field_validator("name")
    @classmethod
    def _short_name(cls, value: str) -> str:
        # Trimmed rather than rejected: a model that likes long titles would otherwise leave
        # the file pending for ever.
        if len(value) <= MAX_NAME_CHARS:
            return value
        return value[: MAX_NAME_CHARS - 3].rstrip() + "..."


@dataclass
class _Partial:
    first: int
    last: int
    text: str

    @property
    def label(self) -> str:
        return f"[{self.first}]" if self.first == self.last else f"[{self.first}-{self.last}]"


@dataclass
class Summariser:
    """Summarises one resource with ``llm``; raises ``LlmError`` when the model fails."""

    llm: Llm
    prompts: Prompts
    max_prompt_tokens: int
    max_parts: int
    calls: list[str] = field(default_factory=list)
    """The prompt kind of each call made, in order (``map``, ``merge``, ...)."""

    def summarise(self, path: str, resource: ResourceText) -> ResourceSummary:
        values = {"path": path, "kind": resource.kind}
        single_budget = self._content_budget("single", values)
        if estimate_tokens(resource.text) <= single_budget:
            return self._ask("single", ResourceSummary, content=resource.text, **values)
        map_budget = self._content_budget("map", values)
        parts = pack(resource.sections, map_budget)
        if len(parts) > self.max_parts:
            raise ResourceSkipped(
                f"too large: {len(parts)} parts of up to {map_budget} tokens, over max_parts "
                f"{self.max_parts} (raise the step's max_parts or split the file)"
            )
        total = str(len(parts))
        partials = []
        for index, part in enumerate(parts, start=1):
            answer = self._ask(
                "map", PartSummary, content=part, index=str(index), total=total, **values
            )
            partials.append(_Partial(index, index, _render(answer)))
        return self._reduce(partials, total, values)

    def _reduce(
        self, partials: list[_Partial], total: str, values: dict[str, str]
    ) -> ResourceSummary:
        reduce_budget = self._content_budget("reduce", values)
        merge_budget = self._content_budget("merge", values)
        # Half a prompt at most per partial: any two then fit one merge prompt, so every round
        # at least halves their number and the rounds end.
        cap = min(reduce_budget, merge_budget) // 2 - estimate_tokens(SEPARATOR)
        items = [self._capped(p, cap) for p in partials]
        while _tokens(items) > reduce_budget:
            merged: list[_Partial] = []
            for group in _groups(items, merge_budget):
                if len(group) == 1:
                    merged.append(group[0])
                    continue
                first, last = group[0].first, group[-1].last
                answer = self._ask(
                    "merge",
                    PartSummary,
                    content=_join(group),
                    first=str(first),
                    last=str(last),
                    total=total,
                    **values,
                )
                merged.append(self._capped(_Partial(first, last, _render(answer)), cap))
            items = merged
        return self._ask("reduce", ResourceSummary, content=_join(items), total=total, **values)

    def _capped(self, partial: _Partial, cap: int) -> _Partial:
        text = f"## {partial.label}\n{partial.text}"
        return _Partial(partial.first, partial.last, fit(text, cap))

    def _content_budget(self, key: str, values: dict[str, str]) -> int:
        widest = {"index": _WIDEST_NUMBER, "total": _WIDEST_NUMBER}
        widest |= {"first": _WIDEST_NUMBER, "last": _WIDEST_NUMBER}
        overhead = sum(
            estimate_tokens(m["content"])
            for m in self._messages(key, content="", **widest, **values)
        )
        overhead += _SPLICE_MARGIN
        budget = self.max_prompt_tokens - overhead
        if budget < _MIN_CONTENT_TOKENS:
            raise ConfigError(
                f"auto_resource: max_prompt_tokens {self.max_prompt_tokens} is too small; the "
                f"{key!r} prompt alone takes {overhead} tokens (allow at least "
                f"{overhead + _MIN_CONTENT_TOKENS})"
            )
        return budget

    def _messages(self, key: str, **values: str) -> list[dict[str, str]]:
        # Unused values are harmless to string.Template, so every prompt gets the same ones.
        return [
            {"role": "system", "content": self.prompts.render("system")},
            {"role": "user", "content": self.prompts.render(key, **values)},
        ]

    def _ask(self, key: str, model: type[ModelT], **values: str) -> ModelT:
        self.calls.append(key)
        return self.llm.structured(self._messages(key, **values), model)


def _render(answer: PartSummary) -> str:
    lines = [answer.summary, *(f"- {point}" for point in answer.key_points if point)]
    return "\n".join(lines)


def _join(items: list[_Partial]) -> str:
    return SEPARATOR.join(item.text for item in items)


def _tokens(items: list[_Partial]) -> int:
    # The subadditive bound of the joined text, matching how groups are packed.
    return joined_tokens((_cost(item) for item in items), SEPARATOR)


def _groups(items: list[_Partial], budget: int) -> list[list[_Partial]]:
    return list(batches(items, budget, _cost, sep=SEPARATOR))


def _cost(item: _Partial) -> int:
    return estimate_tokens(item.text)
