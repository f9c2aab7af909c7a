"""A minimal agent loop with reme's context management before every model call.

Each task is a user message. Before each model call the loop runs ``AgentContext.prepare`` on
the session memory: long tool outputs are cut (the full text goes to ``tool_results/``), and
when the context passes ``max_input_length * compact_ratio`` the oldest turns are folded into
the running summary and saved as daily notes in the background. The model answers with one
action at a time: call a tool, or answer.

    python examples/agent_loop/agent_loop.py WORKSPACE             # the configured model
    python examples/agent_loop/agent_loop.py WORKSPACE --scripted  # replay the scripts here

The tools are toys: ``run_tests`` prints a long, deterministic test log, ``memory_search``
searches the workspace (where the compacted turns end up).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from reme_core.api import AgentContext, Llm, Reme, SessionMemory, format_hits
from reme_plugins.llm_scripted import ScriptedLlm

HERE = Path(__file__).resolve().parent
SYSTEM = (
    "You are a coding assistant. Answer with one JSON action: "
    '{"tool": "run_tests" | "memory_search" | null, "query": "...", "answer": "..."}. '
    "Call a tool when you need its output; set tool to null to answer the user."
)
BUDGET = {"max_input_length": 4000, "compact_ratio": 0.7, "reserve": 1600}
"""A tiny window, so that a short demo compacts; real models have 32k-200k."""


class Action(BaseModel):
    tool: Literal["run_tests", "memory_search"] | None = None
    query: str = ""
    answer: str = ""


class Tools:
    def __init__(self, context: AgentContext):
        self.context = context
        self.runs = 0

    def call(self, action: Action) -> str:
        if action.tool == "memory_search":
            return format_hits(self.context.memory_search(action.query or "tests", max_results=3))
        self.runs += 1
        passed = "".join(f"tests/test_mod{n}.py::test_case PASSED\n" for n in range(120))
        return f"run {self.runs}: 121 tests\n{passed}FAILED tests/test_io.py::test_read - OSError\n"


def as_chat(messages: Sequence[dict[str, Any]]) -> list[dict[str, str]]:
    """Messages for an ``Llm`` (plain role/content): tool traffic written out as text."""
    out = []
    for message in messages:
        if message["role"] == "tool":
            out.append({"role": "user", "content": f"[tool result]\n{message['content']}"})
        elif message.get("tool_calls"):
            call = message["tool_calls"][0]["function"]
            out.append({"role": "assistant", "content": f"calling {call['name']}"})
        else:
            out.append({"role": message["role"], "content": str(message.get("content") or "")})
    return out


def run(
    context: AgentContext, memory: SessionMemory, llm: Llm, tasks: Sequence[str], max_steps: int = 4
) -> list[str]:
    """Work through ``tasks``; return the answers."""
    tools = Tools(context)
    answers: list[str] = []
    for task in tasks:
        memory.add({"role": "user", "content": task})
        for step in range(max_steps):
            messages, _ = context.prepare(memory, SYSTEM, **BUDGET)
            action = llm.structured(
                [{"role": "system", "content": SYSTEM}, *as_chat(messages)], Action
            )
            if action.tool is None or step == max_steps - 1:
                memory.add({"role": "assistant", "content": action.answer or "(no answer)"})
                answers.append(action.answer)
                break
            ident = f"call_{len(memory)}"
            arguments = json.dumps({"query": action.query})
            memory.add(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": ident,
                            "type": "function",
                            "function": {"name": action.tool, "arguments": arguments},
                        }
                    ],
                }
            )
            memory.add({"role": "tool", "tool_call_id": ident, "content": tools.call(action)})
    return answers


def scripted(name: str, loop: bool = False) -> ScriptedLlm:
    return ScriptedLlm(ScriptedLlm.Settings(path=str(HERE / name), loop=loop))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("workspace", type=Path)
    parser.add_argument("--scripted", action="store_true", help="replay agent.yaml/summary.yaml")
    args = parser.parse_args(argv)
    tasks = json.loads((HERE / "tasks.json").read_text("utf-8"))
    with Reme.open(args.workspace) as reme:
        agent_llm = scripted("agent.yaml") if args.scripted else reme.llm
        if agent_llm is None:
            sys.exit("no model: set components.llm, or pass --scripted")
        summary_llm = scripted("summary.yaml", loop=True) if args.scripted else reme.llm
        with AgentContext(reme, llm=summary_llm) as context:
            memory = context.session_memory()
            for answer in run(context, memory, agent_llm, tasks):
                print(f"assistant: {answer}")
            usage = memory.estimate_tokens(BUDGET["max_input_length"], SYSTEM)
            print(f"context: {usage.estimated_tokens} tokens ({usage.context_usage_ratio:.0%})")
            for outcome in context.await_summary_tasks():
                print(f"saved {outcome.messages} messages: {', '.join(outcome.notes)}")
            memory.clear()


if __name__ == "__main__":
    main()
