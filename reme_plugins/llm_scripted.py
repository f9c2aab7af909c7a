"""A chat model that replays answers from a file, for tests and demos.

The file (JSON, or YAML by its ``.yaml``/``.yml`` suffix) holds a list; each call consumes the
next entry in order. A string answers ``complete``; an object answers ``structured`` and is
validated into the response model (a string there is parsed as JSON first); ``{"error": "..."}``
makes that call raise ``LlmError``. When the list is used up the next call is an ``LlmError``
naming the file, unless ``loop`` starts it over. ``structured`` retries like a real model: an
entry that does not validate consumes the next one, up to ``max_retries`` times.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field, ValidationError

from reme_core import hookimpl
from reme_core.components import (
    ComponentContext,
    ComponentSettings,
    Llm,
    ModelT,
    estimate_tokens,
)
from reme_core.errors import ConfigError, LlmError


class ScriptedLlm(Llm):
    """Replays a list of answers from a JSON or YAML file, one per call."""

    name: ClassVar[str] = "scripted"

    class Settings(ComponentSettings):
        path: str = Field(min_length=1)
        """The script: a JSON or YAML list, relative to the workspace. Required."""
        loop: bool = False
        """Start over at the end instead of failing."""
        max_validation_retries: int = Field(2, ge=0)

    settings: Settings

    def __init__(
        self, settings: ComponentSettings | None = None, context: ComponentContext | None = None
    ):
        if settings is None:
            try:
                settings = self.Settings()
            except ValidationError:
                raise ConfigError("the scripted llm needs settings.path: its script file") from None
        super().__init__(settings, context)
        self._lock = threading.Lock()
        self._entries: list[Any] | None = None
        self._next = 0

    @property
    def file(self) -> Path:
        path = Path(self.settings.path).expanduser()
        if not path.is_absolute() and self.context is not None:
            path = self.context.workspace / path
        return path

    @property
    def model_id(self) -> str:
        return f"scripted:{Path(self.settings.path).name}"

    @property
    def remaining(self) -> int | None:
        """Entries left before the script runs out (None when it loops)."""
        if self.settings.loop:
            return None
        return len(self._load()) - self._next

    def complete(self, messages: Sequence[dict[str, str]], *, max_tokens: int | None = None) -> str:
        entry = self._take(messages)
        if not isinstance(entry, str):
            text = json.dumps(entry, ensure_ascii=False)
            self._count_completion(text)
            return text
        self._count_completion(entry)
        return entry

    def structured(
        self,
        messages: Sequence[dict[str, str]],
        response_model: type[ModelT],
        *,
        max_retries: int | None = None,
    ) -> ModelT:
        retries = self.settings.max_validation_retries if max_retries is None else max_retries
        last_error = ""
        for attempt in range(max(retries, 0) + 1):
            if attempt:
                with self._lock:
                    self.usage.retries += 1
            entry = self._take(messages)
            self._count_completion(entry if isinstance(entry, str) else json.dumps(entry))
            try:
                if isinstance(entry, str):
                    return response_model.model_validate_json(entry)
                return response_model.model_validate(entry)
            except ValidationError as exc:
                last_error = str(exc).strip()[:500]
        raise LlmError(
            f"scripted llm {self.file.name}: no valid {response_model.__name__} after "
            f"{retries + 1} attempt{'s' * (retries > 0)}: {last_error}"
        )

    # -- internals ---------------------------------------------------------------------------

    def _load(self) -> list[Any]:
        with self._lock:
            if self._entries is None:
                self._entries = _read_script(self.file)
            return self._entries

    def _take(self, messages: Sequence[dict[str, str]]) -> Any:
        entries = self._load()
        prompt = sum(estimate_tokens(str(m.get("content", ""))) for m in messages)
        with self._lock:
            self.usage.calls += 1
            self.usage.prompt_tokens += prompt
            if self._next >= len(entries):
                if not self.settings.loop or not entries:
                    raise LlmError(
                        f"scripted llm {self.file} is exhausted: all {len(entries)} "
                        "responses were used"
                    )
                self._next = 0
            entry = entries[self._next]
            self._next += 1
        if isinstance(entry, dict) and set(entry) == {"error"}:
            raise LlmError(f"scripted llm error: {entry['error']}")
        return entry

    def _count_completion(self, text: str) -> None:
        with self._lock:
            self.usage.completion_tokens += estimate_tokens(text)


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
