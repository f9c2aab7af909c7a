"""``reme_agentscope.ReMeLight`` driven as an AgentScope agent drives ReMe's, run by
test_agentscope_host.py with the python of the AgentScope venv
(``python agentscope_light.py WORKSPACE``). It builds real AgentScope 2.x messages (a ReAct reply is
one assistant ``Msg`` of text, tool-call and tool-result blocks), calls each method of the manager
and prints one JSON object of what came back, for the test to check.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import sys

from agentscope.message import Msg, TextBlock, ToolCallBlock, ToolResultBlock
from agentscope.tool import ToolResponse
from reme_agentscope import MessageError, ReMeLight

LONG_OUTPUT = "".join(f"row {i:05d} of the build log\n" for i in range(4000))  # ~100 KB


def user(text: str) -> Msg:
    return Msg(name="user", role="user", content=[TextBlock(text=text)])


def reply(turn: int, output: str) -> Msg:
    """One ReAct reply: text, a call, its result, and the answer, in one assistant Msg."""
    call_id = f"call_{turn}"
    return Msg(
        name="assistant",
        role="assistant",
        content=[
            TextBlock(text=f"Let me look (turn {turn})."),
            ToolCallBlock(id=call_id, name="read_log", input=json.dumps({"turn": turn})),
            ToolResultBlock(id=call_id, name="read_log", output=output),
            TextBlock(text=f"Turn {turn}: the build of the otter-lamp service failed."),
        ],
    )


def signatures() -> dict:
    out = {}
    for name, member in inspect.getmembers(ReMeLight):
        if name.startswith("_") and name != "__init__":
            continue
        if isinstance(member, property):
            out[name] = {"property": True}
            continue
        if not callable(member):
            continue
        params = []
        for p in inspect.signature(member).parameters.values():
            if p.name == "self":
                continue
            item = {"name": p.name, "kind": p.kind.name}
            if p.default is not inspect.Parameter.empty:
                item["default"] = repr(p.default)
            params.append(item)
        out[name] = {
            "async": inspect.iscoroutinefunction(member),
            "static": isinstance(inspect.getattr_static(ReMeLight, name), staticmethod),
            "parameters": params,
        }
    return out


async def main(workspace: str) -> dict:
    light = ReMeLight(working_dir=workspace, session_id="agentscope-light-1")
    assert await light.start() is light
    out: dict = {"signatures": signatures()}

    # compact_tool_result: cut in place, the whole output spilled to tool_results/.
    messages = [user("Why did the otter-lamp build fail?"), reply(1, LONG_OUTPUT)]
    returned = await light.compact_tool_result(messages, old_max_bytes=3000, recent_n=0)
    output = messages[1].content[2].output
    out["tool_cut"] = {
        "same_objects": returned[1] is messages[1],
        "output_bytes": len(output.encode()),
        "mentions_spill": "tool_results/call_1" in output,
        "spills": sorted(p.name for p in light.tool_result_path.glob("*.txt")),
    }

    # check_context: cut between whole messages only; under the threshold nothing goes.
    history = [user(f"Question {t} about the otter-lamp build?") for t in range(6)]
    history = [m for t, q in enumerate(history) for m in (q, reply(t, f"log {t} " * 200))]
    to_compact, to_keep, valid = await light.check_context(history, 400, 200)
    out["check"] = {
        "compact": len(to_compact),
        "keep": len(to_keep),
        "valid": valid,
        "in_order": [*to_compact, *to_keep] == history,
        "keeps_last": to_keep[-1] is history[-1],
    }
    under = await light.check_context(history, 10**6)
    out["check_under"] = [len(under[0]), len(under[1]), under[2]]

    # compact_memory without a model: reme's fallback summary (verbatim items), never empty.
    summary = await light.compact_memory(history[:4], language="en")
    as_dict = await light.compact_memory(history[:4], language="en", return_dict=True)
    out["compact"] = {
        "summary": summary,
        "dict_keys": sorted(as_dict),
        "valid": as_dict["is_valid"],
    }

    # pre_reasoning_hook: over budget, so the oldest messages are summarised and persisted.
    kept, new_summary = await light.pre_reasoning_hook(
        history, system_prompt="You are a build assistant.", max_input_length=2000
    )
    out["hook"] = {
        "kept": len(kept),
        "given": len(history),
        "kept_last": kept[-1] is history[-1],
        "summary": new_summary,
        "tasks": len(light.summary_tasks),
    }
    out["await"] = await light.await_summary_tasks()

    # memory_search: ReMe's tool response shape, the hit with its path.
    found = await light.memory_search("otter-lamp build failed", max_results="3")
    out["search"] = {
        "is_tool_response": isinstance(found, ToolResponse),
        "text": found.content[0].text,
    }
    empty = await light.memory_search("")
    out["search_empty"] = empty.content[0].text

    # get_in_memory_memory: compressed and cleared messages go to sessions/dialog/.
    memory = light.get_in_memory_memory()
    await memory.add(history[:4])
    removed = await memory.mark_messages_compressed(history[:2])
    await memory.update_compressed_summary(new_summary)
    got = await memory.get_memory()
    out["in_memory"] = {
        "removed": removed,
        "size": await memory.size(),
        "first_is_summary": got[0].get_text_content().startswith("# Summary"),
        "dialog_files": sorted(p.name for p in light.dialog_path.glob("*.jsonl")),
    }

    # Bad input: one clear error, nothing changed.
    try:
        await light.check_context("not a list", 100)
        out["bad_input"] = None
    except MessageError as exc:
        out["bad_input"] = str(exc)
    out["closed"] = await light.close()
    return out


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1])), default=str))
