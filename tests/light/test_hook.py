"""pre_reasoning_hook end to end: tool outputs cut, the context checked, the summary updated and
the compacted turns persisted through auto_memory in the background; the async API too."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from reme_core.light import AgentContext, AsyncAgentContext, format_hits
from reme_core.runtime import Reme
from tests.fake_llm import RecordingLlm
from tests.light.msgs import assistant, tool, user

SUMMARY = {
    "goal": "Plan the Lisbon trip.",
    "constraints": ["Budget 2000 EUR."],
    "progress": ["Flights compared."],
    "key_decisions": ["Fly TAP."],
    "next_steps": ["Book the hotel."],
    "critical_context": [],
}


def conversation(turns: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for n in range(turns):
        messages += [
            user(f"Turn {n}: the heron nests by the quay number {n}; " + "detail " * 120),
            assistant(f"Noted turn {n}. " + "reply " * 120),
        ]
    return messages


def test_under_budget_nothing_changes(reme: Reme):
    context = AgentContext(reme, session_id="s1", llm=RecordingLlm.replaying([]))
    messages = conversation(2)
    out, summary = context.pre_reasoning_hook(messages, "system", "", max_input_length=100_000)
    assert out == messages and summary == ""
    assert context.await_summary_tasks() == []


def test_over_budget_the_old_turns_are_summarised_and_persisted(reme: Reme, root: Path):
    llm = RecordingLlm.replaying([SUMMARY] * 4)
    context = AgentContext(reme, session_id="trip-1", llm=llm)
    messages = conversation(12)
    total = context.count_messages(messages)
    result = context.run_hook(
        messages,
        "You are a travel agent.",
        "",
        max_input_length=4000,
        compact_ratio=0.7,
        reserve=1000,
    )
    out, summary = result
    assert result.compacted and result.compacted == messages[: len(result.compacted)]
    assert out == messages[len(result.compacted) :] and out[0]["role"] == "user"
    assert context.count_messages(out) <= 1000 < total
    assert "## Goal\nPlan the Lisbon trip." in summary and result.compact.source == "model"
    outcomes = context.await_summary_tasks()
    assert [o.status for o in outcomes] == ["saved"]
    assert outcomes[0].messages == len(result.compacted)
    assert (root / "sessions" / "trip-1.jsonl").exists() and outcomes[0].notes
    # The compacted turns are searchable: the note (verbatim excerpt, no auto_memory model) and
    # the saved transcript.
    hits = context.memory_search("heron nests quay number 0", max_results=5, min_score=0)
    assert hits.hits and "quay number 0" in format_hits(hits)
    assert context.await_summary_tasks() == []


def test_the_next_call_updates_the_summary(reme: Reme):
    context = AgentContext(
        reme, session_id="trip-2", llm=RecordingLlm.replaying([SUMMARY] * 4), persist_pipeline=None
    )
    out, summary = context.pre_reasoning_hook(conversation(12), max_input_length=4000, reserve=1000)
    updated = {**SUMMARY, "progress": ["Flights compared.", "Hotel booked."]}
    context.llm = second = RecordingLlm.replaying([updated] * 4)
    more = out + conversation(12)
    out, summary = context.pre_reasoning_hook(
        more, "", summary, max_input_length=4000, reserve=1000
    )
    assert "- Hotel booked." in summary
    assert "- Flights compared." in second.prompts("ContextSummary")[0]  # it started from it


def test_no_valid_cut_leaves_the_messages(reme: Reme):
    context = AgentContext(
        reme, session_id="s1", llm=RecordingLlm.replaying([]), persist_pipeline=None
    )
    messages = [user("paste " * 6000)]
    result = context.run_hook(messages, max_input_length=4000, reserve=500)
    assert result.messages == messages and not result.split.is_valid and result.summary == ""


def test_tool_results_are_cut_before_the_check(reme: Reme, root: Path):
    context = AgentContext(
        reme, session_id="s1", llm=RecordingLlm.replaying([]), persist_pipeline=None
    )
    big = "log line\n" * 20_000
    messages = [
        user("run it"),
        assistant(None, [("t1", "shell")]),
        tool("t1", big),
        assistant("done"),
    ]
    messages += [user("again"), assistant(None, [("t2", "shell")]), tool("t2", big)]
    result = context.run_hook(messages, max_input_length=200_000, keep_recent_tool_results=1)
    assert len(result.messages[2]["content"]) < 3200  # old: cut hard
    assert 100_000 <= len(result.messages[6]["content"].encode()) < 103_000  # recent: lightly
    assert (root / "tool_results" / "t1.txt").read_text("utf-8") == big


def test_prepare_drives_a_session_memory(reme: Reme):
    context = AgentContext(reme, session_id="s3", llm=RecordingLlm.replaying([SUMMARY] * 4))
    memory = context.session_memory()
    memory.add(conversation(12))
    messages, result = context.prepare(memory, "system", max_input_length=4000, reserve=1000)
    assert result.compacted and memory.summary == result.summary
    assert messages[0]["role"] == "user" and "<context_summary>" in messages[0]["content"]
    assert messages[1:] == result.messages
    assert memory.estimate_tokens(4000).compressed_messages == len(result.compacted)
    context.close()


def test_the_async_api(reme: Reme):
    async def main() -> tuple[list, str, list]:
        async with AsyncAgentContext(
            reme, session_id="s4", llm=RecordingLlm.replaying([SUMMARY] * 4)
        ) as ctx:
            split = await ctx.check_context(conversation(3), threshold=100, reserve=50)
            assert not split.is_valid or split.to_compact
            out, summary = await ctx.pre_reasoning_hook(
                conversation(12), max_input_length=4000, reserve=1000
            )
            outcomes = await ctx.await_summary_tasks()
            return out, summary, outcomes

    out, summary, outcomes = asyncio.run(main())
    assert out and "Plan the Lisbon trip." in summary
    assert [o.status for o in outcomes] == ["saved"]
