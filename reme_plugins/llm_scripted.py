"""A chat model that replays answers from a file, for tests and demos.

The file (JSON, or YAML by its ``.yaml``/``.yml`` suffix) holds a list; each call consumes the
next entry in order. A string answers ``complete``; an object answers ``structured`` and is
validated into the response model (a string there is parsed as JSON first); ``{"error": "..."}``
makes that call raise ``LlmError``. When the list is used up the next call is an ``LlmError``
naming the file, unless ``loop`` starts it over. ``structured`` retries like a real model: an
entry that does not validate consumes the next one, up to ``max_retries`` times.

The replaying itself lives in ``ReplayLlm``, which test doubles subclass too (reme's tests'
``RecordingLlm``): only where the answers come from differs.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field, ValidationError

from reme_core.api import (
    ComponentContext,
    ComponentSettings,
    Llm,
    LlmError,
    ModelT,
    estimate_tokens,
    hookimpl,
    required_settings,
    settings_path,
)

TEXT = "text"
"""The kind of a ``complete`` call; a ``structured`` call's kind is its response model's name."""


class ReplayLlm(Llm):
    """A model answering each attempt with ``respond``: by default the next of ``load_entries()``.

    Entries are answered as the module docstring says; ``usage`` counts every attempt (prompt and
    answer with ``estimate_tokens``, retries of ``structured``), as the real models do. A subclass
    says where entries come from (``load_entries``, read once at the first call) and what to call
    itself in errors (``label``); one may override ``respond`` to work answers out instead.
    """

    class Settings(ComponentSettings):
        max_validation_retries: int = Field(2, ge=0)

    settings: Settings

    def __init__(
        self, settings: ComponentSettings | None = None, context: ComponentContext | None = None
    ):
        super().__init__(settings, context)
        self._lock = threading.Lock()
        self._entries: list[Any] | None = None
        self._next = 0

    @property
    def label(self) -> str:
        """What errors call this model."""
        return f"{self.name} llm"

    @property
    def loops(self) -> bool:
        """Start the entries over when they run out, instead of failing."""
        return False

    def load_entries(self) -> list[Any]:
        """The answers to replay, in order (called once, at the first answer needed)."""
        raise NotImplementedError

    def received(self, kind: str, messages: Sequence[dict[str, str]]) -> None:
        """Called once per call, before its first attempt; ``kind`` is ``TEXT`` or the response
        model's name. Does nothing here (a recording test double keeps the call)."""

    def respond(self, kind: str, messages: list[dict[str, str]]) -> Any:
        """The answer to one attempt: the next entry. Override to work answers out instead."""
        entries = self._load()
        with self._lock:
            if self._next >= len(entries):
                if not self.loops or not entries:
                    raise LlmError(
                        f"{self.label} is exhausted: all {len(entries)} responses were used"
                    )
                self._next = 0
            self._next += 1
            return entries[self._next - 1]

    def complete(self, messages: Sequence[dict[str, str]], *, max_tokens: int | None = None) -> str:
        self.received(TEXT, messages)
        answer = self._attempt(TEXT, messages)
        return answer if isinstance(answer, str) else _text(answer)

    def structured(
        self,
        messages: Sequence[dict[str, str]],
        response_model: type[ModelT],
        *,
        max_retries: int | None = None,
    ) -> ModelT:
        kind = response_model.__name__
        self.received(kind, messages)
        retries = self.settings.max_validation_retries if max_retries is None else max_retries
        last_error = ""
        for attempt in range(max(retries, 0) + 1):
            if attempt:
                with self._lock:
                    self.usage.retries += 1
            answer = self._attempt(kind, messages)
            try:
                if isinstance(answer, str):
                    return response_model.model_validate_json(answer)
                return response_model.model_validate(answer)
            except ValidationError as exc:
                last_error = str(exc).strip()[:500]
        raise LlmError(
            f"{self.label}: no valid {kind} after {retries + 1} "
            f"attempt{'s' * (retries > 0)}: {last_error}"
        )

    # -- internals ---------------------------------------------------------------------------

    def _load(self) -> list[Any]:
        with self._lock:
            if self._entries is None:
                self._entries = self.load_entries()
            return self._entries

    def _attempt(self, kind: str, messages: Sequence[dict[str, str]]) -> Any:
        prompt = sum(estimate_tokens(str(m.get("content", ""))) for m in messages)
        with self._lock:
            self.usage.calls += 1
            self.usage.prompt_tokens += prompt
        answer = self.respond(kind, [dict(m) for m in messages])
        if isinstance(answer, dict) and set(answer) == {"error"}:
            raise LlmError(f"{self.label} error: {answer['error']}")
        completion = estimate_tokens(answer if isinstance(answer, str) else _text(answer))
        with self._lock:
            self.usage.completion_tokens += completion
        return answer


class ScriptedLlm(ReplayLlm):
    """Replays a list of answers from a JSON or YAML file, one per call."""

    name: ClassVar[str] = "scripted"

    class Settings(ReplayLlm.Settings):
        path: str = Field(min_length=1)
        """The script: a JSON or YAML list, relative to the workspace. Required."""
        loop: bool = False
        """Start over at the end instead of failing."""

    settings: Settings

    def __init__(
        self, settings: ComponentSettings | None = None, context: ComponentContext | None = None
    ):
        missing = "the scripted llm needs settings.path: its script file"
        super().__init__(required_settings(settings, self.Settings, missing), context)

    @property
    def file(self) -> Path:
        return settings_path(self.settings.path, self.context)

    @property
    def model_id(self) -> str:
        return f"scripted:{Path(self.settings.path).name}"

    @property
    def label(self) -> str:
        return f"scripted llm {self.file}"

    @property
    def loops(self) -> bool:
        return self.settings.loop

    @property
    def remaining(self) -> int | None:
        """Entries left before the script runs out (None when it loops)."""
        if self.settings.loop:
            return None
        return len(self._load()) - self._next

    def load_entries(self) -> list[Any]:
        return _read_script(self.file)


def _text(answer: Any) -> str:
    return json.dumps(answer, ensure_ascii=False)


def _read_script(path: Path) -> list[Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise LlmError(f"cannot read the scripted llm file {path}: {exc.strerror or exc}") from exc
    try:
        data = _parse(text, yaml_file=path.suffix.lower() in (".yaml", ".yml"))
    except ValueError as exc:
        raise LlmError(f"the scripted llm file {path} does not parse: {exc}") from exc
    if not isinstance(data, list):
        raise LlmError(f"the scripted llm file {path} must hold a list of responses")
    for index, entry in enumerate(data):
        if not isinstance(entry, str | dict | list):
            raise LlmError(
                f"the scripted llm file {path}: entry {index} must be a string or an object"
            )
    return data


def _parse(text: str, *, yaml_file: bool) -> Any:
    if not yaml_file:
        return json.loads(text)
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(str(exc)) from exc


@hookimpl
def register_llms(register: Callable[[type[Llm]], None]) -> None:
    """Register the replaying model as ``scripted``."""
    register(ScriptedLlm)
