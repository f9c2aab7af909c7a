"""A real AgentScope agent with reme's long-term memory, run by test_agentscope_host.py with the
python of the AgentScope venv (``python agentscope_agent.py '<json spec>'``).

The spec names the model endpoint (``model_url``, an OpenAI-compatible server), the memory
(``workspace`` for embedded reme, or ``url`` + ``token`` for ``reme serve``), the ``question``
and whether the model streams; ``spool``, where the memory keeps turns reme did not take;
``state_in`` / ``state_out``, an AgentState JSON file to resume a session from / save it to;
``timeout`` / ``capture_timeout``, the memory's bounds on an HTTP call (else its defaults). The agent is ``agentscope.agent.Agent`` (2.x's ReAct agent) with
an ``OpenAIChatModel`` and ``RemeLongTermMemory`` as middleware and toolkit. Prints one JSON
line: the final answer's text, the tools the agent had, and the agent's session id.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from agentscope.agent import Agent
from agentscope.credential import OpenAICredential
from agentscope.message import Msg, TextBlock
from agentscope.model import OpenAIChatModel
from agentscope.state import AgentState
from agentscope.tool import Toolkit
from reme_agentscope import RemeLongTermMemory


async def main(spec: dict) -> dict:
    where = {"workspace": spec["workspace"]} if spec.get("workspace") else {"url": spec["url"]}
    bounds = {k: float(spec[k]) for k in ("timeout", "capture_timeout") if k in spec}
    memory = RemeLongTermMemory(**where, token=spec.get("token"), spool=spec.get("spool"), **bounds)
    model = OpenAIChatModel(
        credential=OpenAICredential(api_key="sk-scripted-dummy", base_url=spec["model_url"]),
        model="gpt-scripted",
        stream=bool(spec.get("stream", True)),
        max_retries=0,
    )
    tools = memory.list_tools()
    state_in = spec.get("state_in")
    state = AgentState.model_validate_json(Path(state_in).read_text()) if state_in else None
    agent = Agent(
        state=state,
        name="assistant",
        system_prompt="You are a helpful assistant.",
        model=model,
        toolkit=Toolkit(tools=tools),
        middlewares=[memory],
    )
    try:
        reply = await agent.reply(
            Msg(name="user", role="user", content=[TextBlock(text=spec["question"])])
        )
    finally:
        await memory.close()
    if spec.get("state_out"):
        Path(spec["state_out"]).write_text(agent.state.model_dump_json())
    return {
        "answer": reply.get_text_content() or "",
        "tools": [t.name for t in tools],
        "session_id": agent.state.session_id,
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(json.loads(sys.argv[1])))))
