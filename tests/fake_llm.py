"""A recording chat model for tests, and the plugin manager the tests open workspaces with.

``RecordingLlm`` replays answers in order with the shipped ``scripted`` model's code (both are
``ReplayLlm``s of ``reme_plugins.llm_scripted``; only where the answers come from differs), and
keeps every call it gets (one ``Call`` per call, however many attempts it took), so a test can
check what the code under test sent::

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
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

from conftest import DEFAULT_PLUGIN_MODULES
from pydantic import Field

from reme_core import hookimpl
from reme_core.components import (
    AgentWrapper,
    Component,
    ComponentContext,
    ComponentSettings,
    Llm,
    Step,
    estimate_tokens,
)
from reme_core.plugins import Plugins
from reme_plugins.llm_scripted import TEXT, ReplayLlm

__all__ = [
    "TEXT",
    "Call",
    "RecordingLlm",
    "llm_setting",
    "plugins_with",
    "prompt_tokens",
    "write_script",
]


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


class RecordingLlm(ReplayLlm):
    """Replays answers in order and records every call (see the module docstring)."""

    name: ClassVar[str] = "recording"

    class Settings(ReplayLlm.Settings):
        answers: list[Any] = Field(default_factory=list)
        path: str | None = None
        """A JSON file holding the answers instead, read at the first call."""

    settings: Settings

    def __init__(
        self, settings: ComponentSettings | None = None, context: ComponentContext | None = None
    ):
        super().__init__(settings, context)
        self.calls: list[Call] = []
        self.on_call: Callable[[str], None] | None = None
        """Called with each call's kind before it is answered (to race the caller, say)."""

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

    # -- the replay --------------------------------------------------------------------------

    def load_entries(self) -> list[Any]:
        if self.settings.path is None:
            return list(self.settings.answers)
        return json.loads(Path(self.settings.path).read_text(encoding="utf-8"))

    def received(self, kind: str, messages: Sequence[dict[str, str]]) -> None:
        copied = [dict(m) for m in messages]
        with self._lock:
            self.calls.append(Call(kind, copied))
        if self.on_call is not None:
            self.on_call(kind)


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
