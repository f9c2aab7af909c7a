"""A recording chat model for tests, and the plugin manager the tests open workspaces with.

``RecordingLlm`` replays answers in order, the way the shipped ``scripted`` model does, and keeps
every call it gets (one ``Call`` per call, however many attempts it took), so a test can check
what the code under test sent::

    llm = RecordingLlm.replaying([{"answer": "done"}])      # handed to the code directly, or

    path = write_script(tmp_path, [draft()])                 # configured in a workspace
    reme = Reme.open(root, plugins=plugins_with(RecordingLlm), overrides=[llm_setting(path)])
    reme.run("auto_memory", params)
    assert "orjson" in reme.llm.prompts("NoteDraft")[0]

Answers: an object answers ``structured`` and is validated into the response model (a string is
parsed as JSON first); an answer that does not validate is retried with the next one, up to
``max_validation_retries`` times (or the call's ``max_retries``), then the call is an
``LlmError``. A string answers ``complete`` (an object is sent as its JSON). ``{"error": "..."}``
makes that attempt raise ``LlmError``, and so does one after the answers run out. ``usage``
counts every attempt, with ``estimate_tokens``, as the real models do.

A fake whose answer depends on the prompt (which notes a batch holds, which kind of call it is)
overrides ``respond`` instead of replaying; the recording and the accounting stay the same.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

from conftest import DEFAULT_PLUGIN_MODULES
from pydantic import Field, ValidationError

from reme_core import hookimpl
from reme_core.components import (
    AgentWrapper,
    Component,
    ComponentContext,
    ComponentSettings,
    Llm,
    ModelT,
    Step,
    estimate_tokens,
)
from reme_core.errors import LlmError
from reme_core.plugins import Plugins

TEXT = "text"
"""The kind of a ``complete`` call; a ``structured`` call's kind is its response model's name."""


class Call(NamedTuple):
    """One call the model received: its kind and a copy of the messages."""

    kind: str
    messages: list[dict[str, str]]

    @property
    def prompt(self) -> str:
        """The last message's content: the user prompt, or what a tool loop fed back."""
        return self.messages[-1]["content"]


def prompt_tokens(messages: Sequence[dict[str, str]]) -> int:
    """The prompt size the way the models' usage counts it."""
    return sum(estimate_tokens(str(m.get("content", ""))) for m in messages)


class RecordingLlm(Llm):
    """Replays answers in order and records every call (see the module docstring)."""

    name: ClassVar[str] = "recording"

    class Settings(ComponentSettings):
        answers: list[Any] = Field(default_factory=list)
        path: str | None = None
        """A JSON file holding the answers instead, read at the first call."""
        max_validation_retries: int = Field(2, ge=0)

    settings: Settings

    def __init__(
        self, settings: ComponentSettings | None = None, context: ComponentContext | None = None
    ):
        super().__init__(settings, context)
        self.calls: list[Call] = []
        self.on_call: Callable[[str], None] | None = None
        """Called with each call's kind before it is answered (to race the caller, say)."""
        self._answers: list[Any] | None = None
        self._next = 0
        self._lock = threading.Lock()

    @classmethod
    def replaying(cls, answers: Sequence[Any], **settings: Any) -> RecordingLlm:
        return cls(cls.Settings(answers=list(answers), **settings))

    @property
    def model_id(self) -> str:
        return self.name

    # -- what tests read ---------------------------------------------------------------------

    @property
    def messages(self) -> list[list[dict[str, str]]]:
        """The messages of each call, in order."""
        return [call.messages for call in self.calls]

    def prompts(self, kind: str | None = None) -> list[str]:
        """The last message of each call (of ``kind`` only, when given)."""
        return [call.prompt for call in self.calls if kind is None or call.kind == kind]

    # -- the model ---------------------------------------------------------------------------

    def complete(self, messages: Sequence[dict[str, str]], *, max_tokens: int | None = None) -> str:
        self._record(TEXT, messages)
        answer = self._attempt(TEXT, messages)
        return answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)

    def structured(
        self,
        messages: Sequence[dict[str, str]],
        response_model: type[ModelT],
        *,
        max_retries: int | None = None,
    ) -> ModelT:
        kind = response_model.__name__
        self._record(kind, messages)
        retries = self.settings.max_validation_retries if max_retries is None else max_retries
        problem = ""
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
                problem = str(exc).strip()[:500]
        raise LlmError(
            f"recording llm: no valid {kind} after {retries + 1} "
            f"attempt{'s' * (retries > 0)}: {problem}"
        )

    def respond(self, kind: str, messages: list[dict[str, str]]) -> Any:
        """The answer to one attempt: the next one replayed. Override to compute answers."""
        answers = self._load()
        with self._lock:
            if self._next >= len(answers):
                raise LlmError(f"recording llm: all {len(answers)} answers were used")
            self._next += 1
            return answers[self._next - 1]

    # -- internals ---------------------------------------------------------------------------

    def _record(self, kind: str, messages: Sequence[dict[str, str]]) -> None:
        copied = [dict(m) for m in messages]
        with self._lock:
            self.calls.append(Call(kind, copied))
        if self.on_call is not None:
            self.on_call(kind)

    def _attempt(self, kind: str, messages: Sequence[dict[str, str]]) -> Any:
        with self._lock:
            self.usage.calls += 1
            self.usage.prompt_tokens += prompt_tokens(messages)
        answer = self.respond(kind, [dict(m) for m in messages])
        if isinstance(answer, dict) and set(answer) == {"error"}:
            raise LlmError(f"recording llm error: {answer['error']}")
        text = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
        with self._lock:
            self.usage.completion_tokens += estimate_tokens(text)
        return answer

    def _load(self) -> list[Any]:
        with self._lock:
            if self._answers is None:
                if self.settings.path is None:
                    self._answers = list(self.settings.answers)
                else:
                    text = Path(self.settings.path).read_text(encoding="utf-8")
                    self._answers = json.loads(text)
            return self._answers


def write_script(folder: Path, answers: Sequence[Any], name: str = "script.json") -> Path:
    """Write ``answers`` to ``folder/name`` as a script for the ``recording`` or ``scripted``
    model (keep it outside the workspace so it is not indexed)."""
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(list(answers)), encoding="utf-8")
    return path


def llm_setting(path: Path | str, llm: str = "recording", key: str = "components.llm") -> str:
    """The override that makes ``key`` the model ``llm`` replaying the script at ``path``."""
    return f"{key}={{name: {llm}, settings: {{path: '{path}'}}}}"


# -- plugins -------------------------------------------------------------------------------------


class _TestComponents:
    """A plugin registering test components (models, steps, agent wrappers) by their kind."""

    def __init__(self, components: Sequence[type[Component]]):
        unknown = [c for c in components if not issubclass(c, Llm | Step | AgentWrapper)]
        if unknown:
            raise TypeError(f"plugins_with takes Llm, Step and AgentWrapper classes: {unknown}")
        self.components = list(components)

    def _register(self, base: type[Component], register: Callable[[Any], None]) -> None:
        for component in self.components:
            if issubclass(component, base):
                register(component)

    @hookimpl
    def register_llms(self, register):  # type: ignore[no-untyped-def]
        self._register(Llm, register)

    @hookimpl
    def register_steps(self, register):  # type: ignore[no-untyped-def]
        self._register(Step, register)

    @hookimpl
    def register_agent_wrappers(self, register):  # type: ignore[no-untyped-def]
        self._register(AgentWrapper, register)


def plugins_with(*components: type[Component]) -> Plugins:
    """A plugin manager holding the shipped defaults (registered directly, no entry points) and
    ``components``: test models, steps and agent wrappers, each registered under its kind."""
    plugins = Plugins()
    for module in DEFAULT_PLUGIN_MODULES:
        plugins.register(module)
    if components:
        plugins.register(_TestComponents(components), name="test_components")
    return plugins
