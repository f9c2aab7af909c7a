"""One QwenPaw conversation turn through QwenPaw's own app code, run by test_qwenpaw_host.py
with the python of the QwenPaw venv (``python qwenpaw_agent.py '<json spec>'``), after the test
set QwenPaw up with its own CLI (``qwenpaw init``, ``qwenpaw models``, ``qwenpaw plugin
install``) in ``$QWENPAW_WORKING_DIR``.

It does what ``qwenpaw app`` does at startup and per chat request, without the web server:
QwenPaw's ``PluginLoader`` loads the plugins of type ``memory`` from the plugins folder (phase 1
of the app's startup), a ``Workspace`` for the agent starts its services (the memory manager is
built from the agent's ``running.memory_manager_backend``), and ``Workspace.stream_query`` runs
one ``AgentRequest`` per question (one session) through QwenPaw's runtime, each time waiting for
QwenPaw's auto-memory worker to finish the capture it queued after the reply, then stops the
workspace. Prints one JSON line: the
memory manager's class and backend, each answer's text, the auto-memory tasks.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

DONE = {"completed", "failed", "cancelled"}


def _texts(event: object) -> list[str]:
    """Text content of one streamed runtime event (agentscope-runtime style objects)."""
    data = event.model_dump() if hasattr(event, "model_dump") else event
    out: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if node.get("type") == "text" and isinstance(node.get("text"), str):
                out.append(node["text"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(data)
    return out


async def main(spec: dict) -> dict:
    from qwenpaw.app.workspace.workspace import Workspace
    from qwenpaw.config.utils import get_plugins_dir
    from qwenpaw.plugins.loader import PluginLoader
    from qwenpaw.schemas import AgentRequest

    loader = PluginLoader([get_plugins_dir()])
    await loader.load_all_plugins(configs={}, types=["memory"])
    plugins = sorted(loader.get_all_loaded_plugins())

    ws = Workspace(agent_id="default", workspace_dir=spec["agent_dir"])
    await ws.start()
    answers: list[str] = []
    tasks: list[dict] = []
    manager = ws.memory_manager
    try:
        for question in spec["questions"]:
            request = AgentRequest(
                input=[{"role": "user", "content": [{"type": "text", "text": question}]}],
                session_id=spec["session_id"],
                user_id="reme-test",
                channel="console",
            )
            last: list[str] = []
            async for event in ws.stream_query(request):
                texts = _texts(event)
                if texts:
                    last = texts
            answers.append("\n".join(last))
            # The capture QwenPaw queued after this reply, finished before the next turn.
            deadline = time.monotonic() + 60
            while manager is not None and time.monotonic() < deadline:
                tasks = manager.list_auto_memory_tasks()
                if len(tasks) >= len(answers) and all(t["status"] in DONE for t in tasks):
                    break
                await asyncio.sleep(0.2)
    finally:
        await ws.stop()
    return {
        "plugins": plugins,
        "manager": type(manager).__name__ if manager is not None else None,
        "backend": ws.config.running.memory_manager_backend,
        "answers": answers,
        "answer": answers[-1] if answers else "",
        "tasks": [{k: t[k] for k in ("status", "trigger", "result", "error")} for t in tasks],
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(json.loads(sys.argv[1]))), default=str))
