"""dream through the real OpenAI-compatible client (instructor, HTTP retries) against a local fake
server: HTTP errors, timeouts and truncated output fail the unit cleanly; nothing is lost."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipelines.test_dream_support import PREFS, Workspace, decision, extraction
from tests.fake_openai_server import ScriptedServer, Send


class FakeChat(ScriptedServer):
    """Actions: ``("text", content)``, ``("status", code)``, ``("delay", seconds)``."""

    route = "/v1/chat/completions"
    default_action = ("status", 500)

    def answer(self, send: Send, body: dict[str, Any], action: tuple[Any, ...]) -> None:
        if action[0] == "status":
            return send(action[1], json.dumps({"error": {"message": f"scripted {action[1]}"}}))
        if action[0] == "delay":
            time.sleep(action[1])
            action = ("text", "{}")
        reply = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": action[1]},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
        return send(200, json.dumps(reply))


@pytest.fixture
def chat() -> Iterator[FakeChat]:
    server = FakeChat()
    yield server
    server.close()


def test_http_errors_timeouts_and_truncated_output_fail_cleanly_then_succeed(
    tmp_path: Path, chat: FakeChat
):
    ws = Workspace(tmp_path, integrate={"max_decision_retries": 2, "output_retries": 1})
    llm = (
        f"components.llm={{name: openai, settings: {{base_url: '{chat.url}', model: fake, "
        "retries: 1, retry_base_delay: 0, timeout: 0.2}}"
    )
    try:

        def run() -> Any:
            return ws.open(llm=None, extra=[llm]).run("dream", {})

        before = ws.tree()
        chat.script.extend(
            [
                ("text", json.dumps(extraction(PREFS))),
                ("status", 503),  # attempt 1: a 503, retried once by the client, again 503
                ("status", 503),
                ("delay", 0.5),  # attempt 2: a timeout, retried once, again a timeout
                ("delay", 0.5),
                ("text", '{"verb": "CREATE", "target": "digest/perso'),  # attempt 3: truncated,
                ("text", "Sure! Here is my decision."),  # then prose: no valid Decision
            ]
        )
        result = run()
        (outcome,) = result.outputs["decisions"]
        assert outcome["result"] == "failed" and outcome["attempts"] == 3
        assert outcome["reason"].startswith("model error: ")
        assert "no valid Decision" in outcome["reason"]  # the last attempt's cause
        assert len(chat.requests) == 7  # every failure was retried as configured
        assert ws.tree() == before and result.verbs == []
        assert ws.checkpoint()["queue"][0]["unit"]["sources"] == PREFS["sources"]

        create = decision("CREATE", "digest/personal/mira.md", content="# Mira\n\nShort.\n")
        chat.script[:] = [("text", json.dumps(create))]
        again = run()
        assert again.outputs["decisions"][0]["result"] == "applied"
        assert (ws.root / "digest/personal/mira.md").is_file()
        assert ws.checkpoint()["queue"] == []
    finally:
        ws.close()
