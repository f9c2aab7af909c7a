"""proactive through the real OpenAI-compatible client (instructor's structured output, its
re-ask with the validation error) against a local fake server on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipelines.test_dream_openai import FakeChat
from pipelines.test_proactive_support import DEPLOY, HEALTHZ, QUESTION, Workspace, event, new
from reme_core.api import topic_id

TOPIC = topic_id(QUESTION, DEPLOY)


@pytest.fixture
def chat() -> Iterator[FakeChat]:
    server = FakeChat()
    yield server
    server.close()


def test_a_run_over_http_re_asks_a_bad_id_and_takes_the_corrected_answer(
    tmp_path: Path, chat: FakeChat
):
    llm = (
        f"components.llm={{name: openai, settings: {{base_url: '{chat.url}', model: fake, "
        "retries: 0, retry_base_delay: 0, timeout: 5}}"
    )
    ws = Workspace(tmp_path, llm, step={"output_retries": 1})
    ws.write(DEPLOY)
    try:
        chat.script.append(("text", json.dumps(new())))
        first = ws.open(llm=False).run("proactive", {"today": "2026-11-06"})
        assert first.outputs["new"] == [TOPIC] and first.usage.calls == 1

        ws.write(HEALTHZ)
        chat.script[:] = [
            ("text", json.dumps(event("resolved", "t0badbad0", HEALTHZ))),  # not a listed id
            ("text", json.dumps(event("resolved", TOPIC, HEALTHZ, how="200s again"))),
        ]
        second = ws.open(llm=False).run("proactive", {"today": "2026-11-06"})
        assert second.outputs["resolved"] == [TOPIC] and second.outputs["failed"] == []
        # instructor sent the validator's reason back with the second request.
        retry = json.dumps(chat.requests[-1]["body"]["messages"])
        assert "t0badbad0" in retry and "does not exist" in retry
        assert ws.topics()[0]["state"] == "resolved"

        ws.write(HEALTHZ, ws.read(HEALTHZ) + "\nEdited.\n")
        chat.script[:] = [("text", "no JSON here"), ("text", "still none")]
        before = ws.tree()
        third = ws.open(llm=False).run("proactive", {"today": "2026-11-06"})
        assert third.outputs["failed"] and ws.tree() == before
    finally:
        ws.close()
