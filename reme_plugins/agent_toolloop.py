"""The built-in agent wrapper ``toolloop``: a tool-calling loop over any ``Llm``.

Native tool calling differs per provider and the scripted model has none, so each turn asks the
model for one ``AgentAction`` through ``structured``: a file tool with its arguments, or a final
answer. The tool runs through the ``FileTools`` handed in (already confined by the server) and its
JSON result, or the refusal, goes back to the model as the next user message.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, Field, ValidationError, model_validator

from reme_core.api import (
    AgentResult,
    AgentTask,
    AgentToolCall,
    AgentWrapper,
    ComponentSettings,
    ConfigError,
    DeleteInput,
    EditInput,
    FrontmatterInput,
    ListInput,
    Llm,
    LlmError,
    MoveInput,
    OperationInput,
    PathInput,
    Prompts,
    ReadInput,
    RemeError,
    WriteInput,
    hookimpl,
    load_prompts,
)

if TYPE_CHECKING:
    from reme_core.api import FileTools

ToolName = Literal["read", "ls", "stat", "write", "edit", "frontmatter", "move", "delete"]


class AgentAction(BaseModel):
    """What the model answers each turn: one tool call, or the final answer."""

    thought: str = ""
    tool: ToolName | None = None
    args: dict[str, Any] = Field(default_factory=dict)
    answer: str | None = None

    @model_validator(mode="after")
    def _one_of_tool_or_answer(self) -> AgentAction:
        # Both or neither is ambiguous; rejecting it makes the model retry with the reason.
        if (self.tool is None) == (self.answer is None):
            raise ValueError("give either `tool` (with `args`) or `answer`, not both or neither")
        return self


# The same argument models as the API's operations: one definition of what each tool accepts.
ARGS: dict[str, type[OperationInput]] = {
    "read": ReadInput,
    "ls": ListInput,
    "stat": PathInput,
    "write": WriteInput,
    "edit": EditInput,
    "frontmatter": FrontmatterInput,
    "move": MoveInput,
    "delete": DeleteInput,
}
"""Tool name -> its argument model; the names are the ``FileTools`` methods (``frontmatter`` is
``update_frontmatter``)."""


class ToolLoopAgent(AgentWrapper):
    """Asks the model for one action per turn and runs it through the confined file tools."""

    name: ClassVar[str] = "toolloop"

    class Settings(ComponentSettings):
        max_result_chars: int = Field(8000, ge=200)
        """Longest tool result (JSON) fed back to the model; longer ones are cut with a note."""
        language: Literal["en", "zh"] | None = None
        """Language of the tool protocol prompt; None = the task's (the configured ``language``
        when a pipeline step runs the agent), else English."""
        max_retries: int | None = Field(None, ge=0)
        """Validation retries per model call; None = the model's own default."""

    settings: Settings

    def run(self, task: AgentTask, *, tools: FileTools, llm: Llm | None) -> AgentResult:
        if llm is None:
            raise ConfigError(
                "the toolloop agent wrapper needs a model: set components.llm "
                "(or pipelines.<name>.llm)"
            )
        language = self.settings.language or task.language or "en"
        prompts = load_prompts("reme_plugins", "agent_toolloop", language)
        messages = [
            {
                "role": "system",
                "content": prompts.render(
                    "system",
                    allowed=_describe_confinement(prompts, tools.confinement),
                    max_turns=task.max_turns,
                    instructions=task.instructions,
                ),
            },
            {"role": "user", "content": task.prompt},
        ]
        result = AgentResult(stopped="max_turns")
        while result.turns < task.max_turns:
            result.turns += 1
            try:
                action = llm.structured(
                    messages, AgentAction, max_retries=self.settings.max_retries
                )
            except LlmError as exc:
                result.stopped, result.error = "error", str(exc)
                return result
            messages.append({"role": "assistant", "content": action.model_dump_json()})
            if action.tool is None:
                result.answer, result.stopped = action.answer or "", "done"
                return result
            call, feedback = self._call(action.tool, action.args, tools, result.changed)
            result.tool_calls.append(call)
            messages.append({"role": "user", "content": self._feedback(prompts, call, feedback)})
        return result

    def _call(
        self, tool: str, args: dict[str, Any], tools: FileTools, changed: list[str]
    ) -> tuple[AgentToolCall, str]:
        """Run one tool; return the record and the text (result JSON or error) for the model."""
        try:
            parsed = ARGS[tool].model_validate(args)
        except ValidationError as exc:
            error = f"invalid arguments for {tool}: {_validation_text(exc)}"
            return AgentToolCall(tool=tool, args=args, ok=False, error=error), error
        try:
            output = _execute(tool, parsed, tools)
        except RemeError as exc:
            error = str(exc)
            return AgentToolCall(tool=tool, args=args, ok=False, error=error), error
        for path in _touched(tool, output):
            if path not in changed:
                changed.append(path)
        text = json.dumps(output.model_dump(mode="json"), ensure_ascii=False)
        return AgentToolCall(tool=tool, args=args, ok=True), text

    def _feedback(self, prompts: Prompts, call: AgentToolCall, text: str) -> str:
        key = "tool_result" if call.ok else "tool_error"
        return prompts.render(key, tool=call.tool, result=self._cap(text))

    def _cap(self, text: str) -> str:
        # A whole file (or a long listing) in every later prompt would crowd out the task.
        limit = self.settings.max_result_chars
        if len(text) <= limit:
            return text
        return (
            text[:limit] + f"\n[... cut: {limit} of {len(text)} characters shown; "
            "read a narrower line range]"
        )


def _execute(tool: str, args: OperationInput, tools: FileTools) -> BaseModel:
    values = args.model_dump()
    if tool == "frontmatter":
        return tools.update_frontmatter(**values)
    method: Callable[..., BaseModel] = getattr(tools, tool)
    return method(**values)


def _touched(tool: str, output: Any) -> list[str]:
    """Workspace paths a successful tool call changed, in the order they changed."""
    if tool in ("write", "frontmatter"):
        return [output.path] if output.changed else []
    if tool == "edit":
        return [output.path] if output.content_hash != output.before_hash else []
    if tool == "move":
        return [output.path, output.to, *output.rewritten]
    if tool == "delete":
        return [output.path]
    return []


def _describe_confinement(prompts: Prompts, confinement: Sequence[Sequence[str]]) -> str:
    if not confinement:
        return prompts.render("allowed_all")
    if any(len(paths) == 0 for paths in confinement):
        return prompts.render("allowed_none")
    return " AND ".join(json.dumps(list(paths), ensure_ascii=False) for paths in confinement)


def _validation_text(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or 'args'}: {err['msg']}" for err in exc.errors()
    )


@hookimpl
def register_agent_wrappers(register: Callable[[type[AgentWrapper]], None]) -> None:
    """Register the built-in tool loop as ``toolloop``."""
    register(ToolLoopAgent)
