"""The ``toolloop`` agent wrapper: the AgentWrapper conformance suite driven by a recording LLM,
what is specific to the loop (argument errors, result caps, retries, usage), and a run through
``Reme.run_agent`` with the configured components."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import KEYWORD_ONLY_ENV

from reme_core.components import AgentResult, AgentTask
from reme_core.errors import ConfigError
from reme_core.plugins import Plugins
from reme_core.runtime import Reme
from reme_core.testing.agent_wrapper import (
    SEED,
    TODO_PATH,
    AgentWrapperConformance,
    Answer,
    Call,
    Fail,
    Move,
    Scenario,
    seed_workspace,
)
from reme_core.workspace import FileTools, Journal, find_state_dir
from reme_plugins import agent_toolloop
from reme_plugins.agent_toolloop import ToolLoopAgent
from tests.fake_llm import RecordingLlm, llm_setting, write_script


def entries(plan: Sequence[Move]) -> list[dict[str, Any]]:
    """A conformance plan as the actions the recording model answers with."""
    out: list[dict[str, Any]] = []
    for move in plan:
        if isinstance(move, Call):
            out.append({"thought": "next step", "tool": move.tool, "args": move.args})
        elif isinstance(move, Answer):
            out.append({"answer": move.text})
        elif isinstance(move, Fail):
            out.append({"error": move.message})
    return out


class TestToolLoopConformance(AgentWrapperConformance):
    def make_agent(self, scenario: Scenario, scratch: Path) -> tuple[ToolLoopAgent, RecordingLlm]:
        return ToolLoopAgent(), RecordingLlm.replaying(entries(scenario.plan))


# -- toolloop specifics ------------------------------------------------------------------------


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return seed_workspace(tmp_path / "ws")


def run_loop(
    root: Path,
    script: list[Any],
    *,
    allowed: Sequence[str] = ("notes/allowed",),
    llm_settings: dict[str, Any] | None = None,
    max_turns: int = 8,
    **settings: Any,
) -> tuple[AgentResult, RecordingLlm]:
    llm = RecordingLlm.replaying(script, **(llm_settings or {}))
    tools = FileTools(root, journal=Journal(find_state_dir(root))).confined(list(allowed))
    task = AgentTask(instructions="Keep the notes tidy.", prompt="Do it.", max_turns=max_turns)
    result = ToolLoopAgent(ToolLoopAgent.Settings(**settings)).run(task, tools=tools, llm=llm)
    return result, llm


def test_registers_toolloop() -> None:
    plugins = Plugins()
    plugins.register(agent_toolloop, name="agent_toolloop")
    assert plugins.get("agent_wrapper", "toolloop") is ToolLoopAgent


def test_no_model_is_a_config_error(root: Path) -> None:
    tools = FileTools(root, journal=Journal(find_state_dir(root)))
    with pytest.raises(ConfigError, match=r"components\.llm"):
        ToolLoopAgent().run(AgentTask(instructions="i", prompt="p"), tools=tools, llm=None)


def test_system_prompt_has_protocol_paths_and_instructions(root: Path) -> None:
    result, llm = run_loop(root, [{"answer": "ok"}])
    system, user = llm.messages[0]
    assert system["role"] == "system" and user == {"role": "user", "content": "Do it."}
    assert '"tool"' in system["content"] and "frontmatter" in system["content"]
    assert '["notes/allowed"]' in system["content"]
    assert system["content"].rstrip().endswith("Keep the notes tidy.")
    assert result.answer == "ok" and result.turns == 1 and result.tool_calls == []


def test_chinese_protocol_prompt(root: Path) -> None:
    _, llm = run_loop(root, [{"answer": "好"}], allowed=(), language="zh")
    assert "工具" in llm.messages[0][0]["content"]
    assert "所有文件工具调用都会被拒绝" in llm.messages[0][0]["content"]


def test_bad_arguments_are_fed_back_not_fatal(root: Path) -> None:
    script = [
        {"tool": "write", "args": {"path": "notes/allowed/a.md"}},
        {"tool": "write", "args": {"path": "notes/allowed/a.md", "content": "a", "mode": "x"}},
        {"tool": "read", "args": {"path": "notes/allowed/a.md", "start_line": 0}},
        {"tool": "write", "args": {"path": "notes/allowed/a.md", "content": "# A\n"}},
        {"answer": "written"},
    ]
    result, llm = run_loop(root, script)
    missing, unknown, bad_line, ok = result.tool_calls
    assert not missing.ok and "content" in (missing.error or "")
    assert not unknown.ok and "mode" in (unknown.error or "")
    assert not bad_line.ok and "start_line" in (bad_line.error or "")
    assert ok.ok and result.changed == ["notes/allowed/a.md"]
    assert (root / "notes/allowed/a.md").read_text(encoding="utf-8") == "# A\n"
    feedback = llm.messages[1][-1]
    assert feedback["role"] == "user" and "write failed" in feedback["content"]
    assert "content" in feedback["content"]
    assert result.stopped == "done"


def test_refusals_and_conflicts_are_fed_back(root: Path) -> None:
    script = [
        {"tool": "read", "args": {"path": "notes/secret/plan.md"}},
        {"tool": "write", "args": {"path": TODO_PATH, "content": "x\n", "expected_hash": "0" * 64}},
        {"tool": "read", "args": {"path": "notes/allowed/missing.md"}},
        {"answer": "gave up"},
    ]
    result, llm = run_loop(root, script)
    assert [c.ok for c in result.tool_calls] == [False, False, False]
    assert "outside the paths allowed" in llm.messages[1][-1]["content"]
    assert "changed since it was read" in llm.messages[2][-1]["content"]
    assert "does not exist" in llm.messages[3][-1]["content"]
    assert (root / TODO_PATH).read_text(encoding="utf-8") == SEED[TODO_PATH]
    assert result.changed == []


def test_oversized_results_are_cut(root: Path) -> None:
    (root / "notes/allowed/big.md").write_text("# Big\n\n" + "word " * 2000, encoding="utf-8")
    script = [{"tool": "read", "args": {"path": "notes/allowed/big.md"}}, {"answer": "read"}]
    result, llm = run_loop(root, script, max_result_chars=300)
    fed = llm.messages[1][-1]["content"]
    assert "cut: 300 of" in fed
    assert len(fed) < 600
    assert result.tool_calls[0].ok and result.stopped == "done"


def test_garbage_action_is_retried_by_the_model(root: Path) -> None:
    script = [
        "this is not an action",
        {"tool": "ls", "args": {}, "answer": "both"},  # a tool and an answer: ambiguous
        {"tool": "ls", "args": {"path": "notes/allowed"}},
        {"answer": "listed"},
    ]
    result, llm = run_loop(root, script)
    assert result.stopped == "done" and result.answer == "listed"
    assert result.turns == 2 and result.tool_calls[0].ok
    assert llm.usage.retries == 2


def test_garbage_without_retries_is_an_error(root: Path) -> None:
    result, _ = run_loop(root, ["{}", {"answer": "late"}], max_retries=0)
    assert result.stopped == "error" and "AgentAction" in (result.error or "")
    assert result.turns == 1


def test_usage_is_counted_on_the_model(root: Path) -> None:
    script = [
        {"tool": "read", "args": {"path": TODO_PATH}},
        {"tool": "stat", "args": {"path": TODO_PATH}},
        {"answer": "fine"},
    ]
    result, llm = run_loop(root, script)
    assert llm.usage.calls == 3 and llm.usage.retries == 0
    assert llm.usage.prompt_tokens > 0 and llm.usage.completion_tokens > 0
    # Each call sends the growing conversation: the tool results make later prompts longer.
    assert len(llm.messages[2]) == len(llm.messages[1]) + 2 == len(llm.messages[0]) + 4
    assert result.turns == 3


def test_changed_lists_each_path_once_in_order(root: Path) -> None:
    done = "notes/allowed/done.md"
    script = [
        {"tool": "frontmatter", "args": {"path": TODO_PATH, "set": {"status": "archived"}}},
        {"tool": "move", "args": {"src": TODO_PATH, "dst": done}},
        {"tool": "write", "args": {"path": "notes/allowed/same.md", "content": "same\n"}},
        {"tool": "write", "args": {"path": "notes/allowed/same.md", "content": "same\n"}},
        {"tool": "edit", "args": {"path": done, "old": "status: open", "new": "status: done"}},
        {"tool": "delete", "args": {"path": done}},
        {"answer": "tidied"},
    ]
    result, _ = run_loop(root, script, allowed=("notes",))
    assert all(c.ok for c in result.tool_calls), result.tool_calls
    # The move rewrote the link in notes/other.md, so that note changed too.
    assert result.changed == [TODO_PATH, done, "notes/other.md", "notes/allowed/same.md"]
    assert "[[done]]" in (root / "notes/other.md").read_text(encoding="utf-8")
    assert not (root / TODO_PATH).exists() and not (root / done).exists()


def test_unchanged_write_is_not_listed(root: Path) -> None:
    script = [{"tool": "write", "args": {"path": TODO_PATH, "content": SEED[TODO_PATH]}}]
    result, _ = run_loop(root, [*script, {"answer": "same"}])
    assert result.tool_calls[0].ok and result.changed == []


# -- through the runtime -----------------------------------------------------------------------


def test_run_agent_confines_to_the_allowed_paths(tmp_path: Path, default_plugins: Plugins) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    write = {"tool": "write", "args": {"path": "notes/zebra.md", "content": "# Zebra quokka\n"}}
    answers = write_script(tmp_path, [write, {"answer": "refused"}, write, {"answer": "written"}])
    overrides = [
        "components.agent_wrapper={name: toolloop, settings: {max_result_chars: 2000}}",
        llm_setting(answers, "scripted"),
    ]
    task = AgentTask(instructions="Write notes.", prompt="Write notes/zebra.md.")
    opened = Reme.open(root, plugins=default_plugins, env=KEYWORD_ONLY_ENV, overrides=overrides)
    with opened as reme:
        nothing = reme.run_agent(task, allowed_paths=[])
        assert not (root / "notes/zebra.md").exists()
        assert nothing.changed == [] and not nothing.tool_calls[0].ok
        assert "outside the paths allowed" in (nothing.tool_calls[0].error or "")
        assert nothing.stopped == "done"

        written = reme.run_agent(task, allowed_paths=["notes"])
        assert written.changed == ["notes/zebra.md"]
        assert (root / "notes/zebra.md").read_text(encoding="utf-8") == "# Zebra quokka\n"
        # Written through the workspace's own tools: indexed before the call returned.
        hits = reme.search("quokka").hits
        assert [h.path for h in hits] == ["notes/zebra.md"]
        assert reme.llm is not None and reme.llm.usage.calls == 4
