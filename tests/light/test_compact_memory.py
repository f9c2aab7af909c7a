"""compact_memory: a structured summary from the model, incremental, in parts when long,
verbatim items kept, and a fallback when there is no model or its output is garbage."""

from __future__ import annotations

from typing import Any

import pytest

from reme_core.light import ContextError, TokenCounter, compact_memory
from reme_core.light.summary import parse_summary, render_summary
from reme_core.pipelines.prompts import load_prompts
from tests.fake_llm import RecordingLlm
from tests.light.msgs import assistant, tool, user

EN = load_prompts("reme_core.light", "compact", "en")
ZH = load_prompts("reme_core.light", "compact", "zh")
HISTORY = [
    user("Add retries to the uploader in src/uploader/client.py; keep the API unchanged."),
    assistant(None, [("c1", "run_tests")]),
    tool(
        "c1", "FAILED tests/test_client.py::test_retry - TimeoutError: upload timed out after 30s"
    ),
    assistant("I will wrap send_chunk() in a retry loop with backoff."),
]


def answer(**changes: Any) -> dict[str, Any]:
    base = {
        "goal": "Add retries to the uploader without changing its API.",
        "constraints": ["Keep the public API unchanged."],
        "progress": ["Reproduced the failing test."],
        "key_decisions": ["Retry with exponential backoff."],
        "next_steps": ["Wrap send_chunk() in a retry loop.", "Rerun the tests."],
        "critical_context": ["src/uploader/client.py"],
    }
    return {**base, **changes}


def test_the_model_summary_has_every_section_and_keeps_verbatim_items(counter: TokenCounter):
    llm = RecordingLlm.replaying([answer()])
    result = compact_memory(HISTORY, llm=llm, counter=counter, prompts=EN)
    assert result.source == "model" and result.calls == 1 and result.parts == 1
    for heading in (
        "## Goal",
        "## Constraints",
        "## Progress",
        "## Key Decisions",
        "## Next Steps",
        "## Critical Context",
    ):
        assert heading in result.text
    # The model left out the test path and the error line; they are added verbatim.
    assert "tests/test_client.py" in result.summary.critical_context
    assert any(
        "TimeoutError: upload timed out after 30s" in i for i in result.summary.critical_context
    )
    prompt = llm.prompts("ContextSummary")[0]
    assert "[tool result c1]" in prompt and "send_chunk()" in prompt
    assert "(none: this is the first summary" in prompt


def test_an_update_starts_from_the_previous_summary(counter: TokenCounter):
    first = compact_memory(
        HISTORY, llm=RecordingLlm.replaying([answer()]), counter=counter, prompts=EN
    )
    llm = RecordingLlm.replaying([answer(progress=["Retries added.", "Tests pass."])])
    second = compact_memory(
        [user("Now also log each retry."), assistant("Done: log.warning in send_chunk().")],
        llm=llm,
        counter=counter,
        prompts=EN,
        previous_summary=first.text,
    )
    assert first.text in llm.prompts("ContextSummary")[0]
    assert "- Tests pass." in second.text


def test_a_long_history_is_folded_in_parts_within_the_budget(counter: TokenCounter):
    history = []
    for n in range(40):
        history += [user(f"step {n}: " + "details " * 150), assistant(f"did step {n}")]
    llm = RecordingLlm.replaying([answer(progress=[f"part {n}"]) for n in range(20)])
    result = compact_memory(
        history, llm=llm, counter=counter, prompts=EN, max_input_length=6000, compact_ratio=0.5
    )
    assert result.parts == result.calls > 1
    prompts = [call.messages for call in llm.calls]
    for messages in prompts:
        assert sum(counter.text(m["content"]) for m in messages) <= 3000
    # Each part after the first starts from the summary of the parts before.
    assert "part 0" in prompts[1][1]["content"]
    assert "step 39" in prompts[-1][1]["content"]
    assert f"part {result.parts - 1}" in result.text


def test_one_message_larger_than_the_budget_is_cut_not_dropped(counter: TokenCounter):
    huge = [user("start " + "blob " * 20_000 + " the end marker")]
    llm = RecordingLlm.replaying([answer()])
    compact_memory(
        huge, llm=llm, counter=counter, prompts=EN, max_input_length=4000, compact_ratio=0.5
    )
    prompt = llm.prompts("ContextSummary")[0]
    assert "start" in prompt and "end marker" in prompt and "tokens cut" in prompt
    assert counter.text(prompt) < 2000


def test_garbage_output_falls_back_to_a_summary_without_the_model(counter: TokenCounter):
    llm = RecordingLlm.replaying(["not json at all", {"goal": 5}, ["a", "list"]])
    result = compact_memory(HISTORY, llm=llm, counter=counter, prompts=EN, previous_summary="")
    assert result.source == "fallback" and result.calls == 3
    assert result.warnings and "model failed" in result.warnings[0]
    assert result.summary.goal.startswith("Add retries to the uploader")
    assert "4 earlier messages were compacted without a model" in result.text
    # Verbatim items are added once: the path is in the goal already, the test file is not.
    assert "src/uploader/client.py" not in result.summary.critical_context
    assert "tests/test_client.py" in result.summary.critical_context


def test_without_a_model_the_previous_summary_is_kept_and_extended(counter: TokenCounter):
    first = compact_memory(
        HISTORY, llm=RecordingLlm.replaying([answer()]), counter=counter, prompts=EN
    )
    result = compact_memory(
        [user("also check config/retry.yaml")],
        llm=None,
        counter=counter,
        prompts=EN,
        previous_summary=first.text,
    )
    assert result.source == "fallback"
    assert result.summary.goal == "Add retries to the uploader without changing its API."
    assert "Wrap send_chunk() in a retry loop." in result.summary.next_steps
    assert "config/retry.yaml" in result.summary.critical_context


def test_chinese_headings_and_parsing_either_language(counter: TokenCounter):
    result = compact_memory(
        HISTORY, llm=RecordingLlm.replaying([answer()]), counter=counter, prompts=ZH
    )
    assert "## 目标" in result.text and "## 关键上下文" in result.text
    parsed = parse_summary(result.text)
    assert parsed is not None and parsed.next_steps == result.summary.next_steps
    assert parse_summary(render_summary(parsed, EN)) == parsed
    assert parse_summary("just some text") is None


def test_the_summary_is_capped(counter: TokenCounter):
    many = answer(progress=[f"finding number {n} " + "word " * 30 for n in range(200)])
    result = compact_memory(
        HISTORY,
        llm=RecordingLlm.replaying([many]),
        counter=counter,
        prompts=EN,
        max_summary_tokens=1000,
    )
    assert result.summary_tokens <= 1000
    assert result.summary.progress[-1].startswith("finding number 199")


def test_bad_parameters_are_refused(counter: TokenCounter):
    with pytest.raises(ContextError):
        compact_memory(HISTORY, llm=None, counter=counter, prompts=EN, compact_ratio=0)


KEY = "sk-proj-Abcdefghijklmnopqrstuvwxyz012345"
SECRET_HISTORY = [
    user(f"Deploy with OPENAI_API_KEY={KEY}, then check src/deploy.py."),
    assistant(None, [("c1", "deploy")]),
    tool("c1", f"AuthenticationError: invalid key {KEY} (db password=hunter2x)"),
]
ECHO = answer(
    goal=f"Deploy with the key {KEY}.",
    progress=["Tried password=hunter2x."],
    critical_context=[KEY, "src/deploy.py"],
)


@pytest.mark.parametrize(
    ("script", "source"),
    [([ECHO], "model"), (None, "fallback"), (["not json"] * 3, "fallback")],
    ids=["the model repeats it", "no model", "the model fails"],
)
def test_a_secret_in_the_messages_never_reaches_the_summary(
    counter: TokenCounter, script: list | None, source: str
):
    llm = None if script is None else RecordingLlm.replaying(script)
    result = compact_memory(
        SECRET_HISTORY,
        llm=llm,
        counter=counter,
        prompts=EN,
        previous_summary="## Goal\nShip it.\n\n## Critical Context\n- api_key: q8w7e6r5t4",
    )
    assert result.source == source
    everything = result.text + result.summary.model_dump_json()
    for secret in (KEY, "hunter2x", "q8w7e6r5t4"):
        assert secret not in everything
    assert "[REDACTED:openai_key]" in result.text
    # The verbatim items are still kept, the error line with its key masked.
    assert "src/deploy.py" in result.summary.critical_context
    assert any(
        i.startswith("AuthenticationError: invalid key [REDACTED:openai_key]")
        for i in result.summary.critical_context
    )


def test_an_extra_instruction_ends_the_system_prompt(counter: TokenCounter):
    """ReMeLight's ``extra_instruction``: the caller's words on what to keep reach the model."""
    llm = RecordingLlm.replaying([answer()])
    compact_memory(
        HISTORY, llm=llm, counter=counter, prompts=EN, extra_instruction="Drop debug logs."
    )
    system = llm.calls[0].messages[0]
    assert system["role"] == "system" and system["content"].endswith("\n\nDrop debug logs.")
