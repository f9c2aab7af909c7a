"""The agent contract: what an agent is asked (``AgentTask``), what it did (``AgentToolCall``,
``AgentResult``) and the wrapper that runs it over the workspace file tools."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from reme_core.components.base import Component

if TYPE_CHECKING:
    from reme_core.components.llm import Llm
    from reme_core.workspace.tools import FileTools


class AgentTask(BaseModel):
    """What an agent is asked to do. The paths it may touch are not part of the task: they are
    fixed by the tools it is handed (see ``AgentWrapper.run``)."""

    instructions: str
    """The system prompt: the agent's role and rules."""
    prompt: str
    """The user message: the work itself, with any input inlined."""
    max_turns: int = Field(default=12, ge=1, le=200)
    """Model calls at most; the run stops (``stopped="max_turns"``) when they are spent."""
    language: str | None = None
    """Language for the wrapper's own prompts (``en``, ``zh``); pipeline steps get the configured
    ``language`` filled in."""


class AgentToolCall(BaseModel):
    """One tool call the agent made, as the wrapper executed it."""

    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    ok: bool
    error: str | None = None
    """Why the call was refused or failed (fed back to the agent, which may try again)."""


class AgentResult(BaseModel):
    answer: str = ""
    """The agent's final message."""
    stopped: Literal["done", "max_turns", "error"] = "done"
    error: str | None = None
    turns: int = 0
    tool_calls: list[AgentToolCall] = Field(default_factory=list)
    changed: list[str] = Field(default_factory=list)
    """Workspace paths written, edited, moved or deleted, in order, without repeats."""


class AgentWrapper(Component, ABC):
    """Runs an agent over the workspace file tools.

    Contract (``reme_core.testing.AgentWrapperConformance`` checks it for any implementation):

    - ``tools`` is a ``FileTools`` already confined by the server to the paths this call may
      touch (``reme.files.confined(allowed)``). The wrapper reaches the workspace only through
      it, so a refused path stays refused: the agent (and the step's caller) cannot widen it.
    - ``llm`` is the pipeline's model, or None for wrappers that bring their own agent (a Claude
      Code or Codex CLI wrapper); such a wrapper must still write only through ``tools``.
    - A refused or failing tool call is reported back to the agent and recorded in
      ``tool_calls`` with ``ok=False``; it does not end the run.
    - The run ends when the agent answers without a tool call (``done``), when ``max_turns`` is
      spent, or on an LLM failure (``error``: files already written stay written and are listed
      in ``changed``).
    """

    @abstractmethod
    def run(self, task: AgentTask, *, tools: FileTools, llm: Llm | None) -> AgentResult:
        """Run ``task`` to completion."""
