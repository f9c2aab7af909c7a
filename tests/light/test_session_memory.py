"""SessionMemory: messages, the summary put first, usage estimates, compression persisted to
sessions/dialog/<date>.jsonl, clear, and the state_dict round trip."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from reme_core.light import AgentContext, ContextError, SessionMemory
from reme_core.runtime import Reme
from tests.fake_llm import RecordingLlm
from tests.light.msgs import assistant, tool, user


def dialog_lines(root: Path) -> list[dict]:
    day = dt.datetime.now(dt.UTC).date().isoformat()
    path = root / "sessions" / "dialog" / f"{day}.jsonl"
    return (
        [json.loads(line) for line in path.read_text("utf-8").splitlines()] if path.exists() else []
    )


@pytest.fixture
def memory(context: AgentContext) -> SessionMemory:
    mem = context.session_memory()
    mem.add({"role": "system", "content": "Be brief."})
    mem.add([user("first question"), assistant(None, [("c1", "search")]), tool("c1", "result")])
    mem.add([assistant("first answer"), user("second question"), assistant("second answer")])
    return mem


def test_get_memory_leaves_out_compressed_messages_and_puts_the_summary_first(
    memory: SessionMemory, root: Path
):
    assert len(memory) == 7 and memory.get_memory() == memory.messages
    marked = memory.mark_messages_compressed(memory.messages[1:5])
    assert marked == [1, 2, 3, 4]
    memory.update_summary("## Goal\nAnswer two questions.")
    got = memory.get_memory()
    assert got[0]["role"] == "system"
    assert got[1]["role"] == "user" and "Answer two questions." in got[1]["content"]
    assert "<context_summary>" in got[1]["content"]
    assert [m["content"] for m in got[2:]] == ["second question", "second answer"]
    assert memory.get_memory(prepend_summary=False) == [memory.messages[0], *memory.messages[5:]]
    lines = dialog_lines(root)
    assert [line["message"] for line in lines] == memory.messages[1:5]
    assert {line["session_id"] for line in lines} == {"s1"}


def test_estimate_tokens_reports_usage_of_what_would_be_sent(memory: SessionMemory):
    before = memory.estimate_tokens(1000)
    assert before.messages == 7 and before.compressed_messages == 0 and before.summary_tokens == 0
    assert before.estimated_tokens == before.message_tokens
    assert before.context_usage_ratio == pytest.approx(before.estimated_tokens / 1000, abs=1e-4)
    memory.mark_messages_compressed(4)
    memory.update_summary("A summary " * 50)
    after = memory.estimate_tokens(1000, system_prompt="You are a helpful assistant.")
    assert after.message_tokens < before.message_tokens and after.summary_tokens > 50
    assert (
        after.estimated_tokens == after.message_tokens + after.summary_tokens + after.system_tokens
    )
    with pytest.raises(ContextError):
        memory.estimate_tokens(0)


def test_clear_persists_each_message_once(memory: SessionMemory, root: Path):
    memory.mark_messages_compressed(2)
    memory.clear()
    assert len(memory) == 0 and memory.summary == "" and memory.get_memory() == []
    lines = dialog_lines(root)
    assert len(lines) == 7  # two at compression, the other five at clear, none twice
    assert lines[0]["message"]["content"] == "first question"


def test_a_list_from_elsewhere_is_refused(memory: SessionMemory):
    with pytest.raises(ContextError, match="another memory"):
        memory.mark_messages_compressed([assistant("not mine"), user("x")])
    with pytest.raises(ContextError, match="cannot mark 9"):
        memory.mark_messages_compressed(9)


def test_state_dict_round_trip(memory: SessionMemory, context: AgentContext):
    memory.mark_messages_compressed(4)
    memory.update_summary("## Goal\nKeep going.")
    state = memory.state_dict()
    restored = context.session_memory()
    restored.load_state_dict(json.loads(json.dumps(state)))
    assert restored.state_dict() == state
    assert restored.get_memory() == memory.get_memory()
    assert restored.estimate_tokens(4000) == memory.estimate_tokens(4000)
    # The restored memory does not persist the already-persisted messages again.
    restored.clear()


@pytest.mark.parametrize(
    ("state", "error"),
    [
        ({"session_id": "s", "messages": [{"role": "user", "content": "x"}]}, "same length"),
        ({"session_id": "s", "version": 2}, "version"),
        (
            {
                "session_id": "s",
                "messages": [{"role": "bot"}],
                "compressed": [False],
                "persisted": [False],
            },
            r"messages\[0\]\.role",
        ),
    ],
)
def test_a_bad_state_is_refused_and_changes_nothing(memory: SessionMemory, state: dict, error: str):
    before = memory.state_dict()
    with pytest.raises(ContextError, match=error):
        memory.load_state_dict(state)
    assert memory.state_dict() == before


def test_without_a_workspace_nothing_is_written(context: AgentContext, root: Path):
    mem = SessionMemory(context.counter, context.prompts(), "s2")
    mem.add(user("hi"))
    mem.mark_messages_compressed(1)
    mem.clear()
    assert dialog_lines(root) == []


KEY = "sk-proj-Abcdefghijklmnopqrstuvwxyz012345"
SECRETS = (KEY, "hunter2x", "q8w7e6r5t4")


def test_secrets_never_reach_the_dialog_file_or_the_summary(reme: Reme, root: Path):
    # The summarising model repeats the secrets: the summary is redacted all the same.
    echo = {"goal": f"Deploy with {KEY}.", "critical_context": ["password=hunter2x"]}
    llm = RecordingLlm.replaying([echo] * 4)
    with AgentContext(reme, session_id="s2", llm=llm, persist_pipeline=None) as context:
        memory = context.session_memory()
        call = assistant(None, [("c1", "deploy")])
        call["tool_calls"][0]["function"]["arguments"] = f'{{"key": "{KEY}"}}'
        result_parts = [{"type": "text", "text": "Authorization: Bearer q8w7e6r5t4q8w7"}]
        memory.add(
            [
                user(f"Deploy with OPENAI_API_KEY={KEY}; the db password=hunter2x, please"),
                call,
                {"role": "tool", "tool_call_id": "c1", "content": result_parts},
            ]
        )
        for n in range(10):
            memory.add([user(f"Turn {n}: " + "detail " * 150), assistant("reply " * 150)])
        _, result = context.prepare(memory, max_input_length=4000, reserve=1000)
        assert len(result.compacted) > 3 and result.compact.source == "model"
        assert KEY in memory.messages[0]["content"]  # the memory keeps what the agent gave it
        memory.clear()
    lines = dialog_lines(root)
    assert len(lines) == 23
    text = json.dumps(lines)
    for secret in SECRETS:
        assert secret not in text and secret not in result.summary
    first, call_line, result_line = (line["message"] for line in lines[:3])
    assert first["content"] == (
        "Deploy with OPENAI_API_KEY=[REDACTED:openai_key]; the db password=[REDACTED:secret], please"
    )
    assert call_line["tool_calls"][0]["function"]["arguments"] == '{"key": "[REDACTED:openai_key]"}'
    assert result_line["content"] == [
        {"type": "text", "text": "Authorization: Bearer [REDACTED:bearer_token]"}
    ]
    assert "[REDACTED:openai_key]" in result.summary
