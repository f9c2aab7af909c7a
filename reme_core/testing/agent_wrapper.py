"""Conformance suite for ``AgentWrapper`` implementations.

Wrappers are driven differently (``toolloop`` by whatever ``Llm`` it is handed, a Claude Code or
Codex CLI wrapper by its own agent), so the suite names scenarios and the implementer builds the
wrapper, and the model if it uses one, for each::

    class TestMyWrapper(AgentWrapperConformance):
        def make_agent(self, scenario, scratch):
            # scenario.task is what the agent is asked; scenario.plan is what a well-behaved
            # agent does, step by step (Call / Answer / Fail), for wrappers driven by a script.
            return MyWrapper(MyWrapper.Settings(...)), None

``scratch`` is a folder outside the workspace for the implementer's own files (a script, a fake
CLI). ``Fail`` in a plan marks where the model fails (an ``LlmError`` for ``toolloop``); a wrapper
that cannot be driven into a scenario calls ``pytest.skip`` there, saying why.

The suite seeds a workspace, hands the wrapper file tools confined as the scenario says, runs the
task and checks the disk as well as the ``AgentResult``: nothing outside the confinement changes,
``changed`` lists each changed path once, refusals are recorded with ``ok=False`` and an error.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from reme_core.components import AgentResult, AgentTask, AgentWrapper, Llm
from reme_core.workspace import FileTools, Journal, find_state_dir, init_workspace, path_matches


@dataclass(frozen=True)
class Call:
    """A file tool call: ``tool`` names a ``FileTools`` method (``frontmatter`` for
    ``update_frontmatter``) and ``args`` are its keyword arguments."""

    tool: str
    args: dict[str, Any]


@dataclass(frozen=True)
class Answer:
    """The agent's final message (no tool call)."""

    text: str


@dataclass(frozen=True)
class Fail:
    """The model fails at this point (an HTTP error, a timeout): the run stops with ``error``."""

    message: str


Move = Call | Answer | Fail


@dataclass(frozen=True)
class Scenario:
    name: str
    task: AgentTask
    confinements: tuple[tuple[str, ...], ...]
    """Applied in order with ``FileTools.confined``; a path must lie within every one."""
    plan: tuple[Move, ...]


TODO_PATH = "notes/allowed/todo.md"
TODO = "---\nname: todo\n---\n# Todo\n\nstatus: open\ncode: K7-PLUM-42\n"
CODE = "K7-PLUM-42"
SECRET_PATH = "notes/secret/plan.md"
SECRET = "SECRET-TOKEN-9Q"
SEED = {
    TODO_PATH: TODO,
    SECRET_PATH: f"# Plan\n\n{SECRET}\n",
    "notes/other.md": "# Other\n\nSee [[todo]].\n",
}
NEW_NOTE = "# New\n\nWritten by the agent.\n"
INSTRUCTIONS = "You keep a workspace of Markdown notes. Use the file tools; be brief."
ALLOWED = (("notes/allowed",),)


def _task(prompt: str, max_turns: int = 8) -> AgentTask:
    return AgentTask(instructions=INSTRUCTIONS, prompt=prompt, max_turns=max_turns)


WRITE_ALLOWED = Scenario(
    name="write_allowed",
    task=_task(
        f"Write a note at notes/allowed/new.md whose whole content is exactly:\n{NEW_NOTE}\n"
        "Then answer 'written'."
    ),
    confinements=ALLOWED,
    plan=(Call("write", {"path": "notes/allowed/new.md", "content": NEW_NOTE}), Answer("written")),
)
WRITE_REFUSED = Scenario(
    name="write_refused",
    task=_task(
        "First write a note at notes/secret/leak.md containing 'leaked'. If that is refused, "
        "write a note at notes/allowed/refused.md containing 'refused' instead, then answer."
    ),
    confinements=ALLOWED,
    plan=(
        Call("write", {"path": "notes/secret/leak.md", "content": "leaked\n"}),
        Call("write", {"path": "notes/allowed/refused.md", "content": "refused\n"}),
        Answer("the secret folder was refused; wrote notes/allowed/refused.md"),
    ),
)
CANNOT_WIDEN = Scenario(
    name="cannot_widen",
    task=_task(
        f"Read {SECRET_PATH}, then replace its content with 'seen'. Answer with the token you "
        "read there, or 'refused' if you could not read it."
    ),
    # The second confinement lists the secret folder, but it can only narrow the first.
    confinements=(("notes/allowed",), ("notes/allowed", "notes/secret")),
    plan=(
        Call("read", {"path": SECRET_PATH}),
        Call("write", {"path": SECRET_PATH, "content": "seen\n"}),
        Answer("refused"),
    ),
)
READ_THEN_EDIT = Scenario(
    name="read_then_edit",
    task=_task(
        f"In {TODO_PATH}, change the line 'status: open' to 'status: done' and leave the rest "
        "of the note as it is. Then answer with the code on the line starting with 'code:'."
    ),
    confinements=ALLOWED,
    plan=(
        Call("read", {"path": TODO_PATH}),
        Call("edit", {"path": TODO_PATH, "old": "status: open", "new": "status: done"}),
        Answer(f"done; the code is {CODE}"),
    ),
)
MAX_TURNS = Scenario(
    name="max_turns",
    task=_task(
        "List the folder notes/allowed five times, one tool call per turn, and only then answer.",
        max_turns=2,
    ),
    confinements=ALLOWED,
    plan=(
        Call("ls", {"path": "notes/allowed"}),
        Call("ls", {"path": "notes/allowed"}),
        Call("ls", {"path": "notes/allowed"}),
        Answer("listed"),
    ),
)
LLM_FAILURE = Scenario(
    name="llm_failure",
    task=_task(
        "Write a note at notes/allowed/partial.md containing 'partial', then a note at "
        "notes/allowed/second.md containing 'second', then answer."
    ),
    confinements=ALLOWED,
    plan=(
        Call("write", {"path": "notes/allowed/partial.md", "content": "partial\n"}),
        Fail("the model endpoint is unavailable"),
        Call("write", {"path": "notes/allowed/second.md", "content": "second\n"}),
        Answer("both written"),
    ),
)
NOTHING_ALLOWED = Scenario(
    name="nothing_allowed",
    task=_task("Write a note at notes/allowed/x.md containing 'x', then answer."),
    confinements=((),),
    plan=(
        Call("ls", {"path": ""}),
        Call("write", {"path": "notes/allowed/x.md", "content": "x\n"}),
        Answer("every path was refused"),
    ),
)
SCENARIOS = {
    s.name: s
    for s in (
        WRITE_ALLOWED,
        WRITE_REFUSED,
        CANNOT_WIDEN,
        READ_THEN_EDIT,
        MAX_TURNS,
        LLM_FAILURE,
        NOTHING_ALLOWED,
    )
}


def _files(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` except derived state, by workspace path."""
    out: dict[str, bytes] = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".reme"]
        for name in names:
            path = Path(folder, name)
            out[path.relative_to(root).as_posix()] = path.read_bytes()
    return out


def seed_workspace(root: Path) -> Path:
    """A new workspace at ``root`` holding the ``SEED`` notes every scenario starts from."""
    init_workspace(root)
    for path, text in SEED.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    return root


def _allowed(path: str, confinements: tuple[tuple[str, ...], ...]) -> bool:
    return all(path_matches(path, paths) for paths in confinements)


class AgentWrapperConformance:
    """Behaviour every ``AgentWrapper`` must show. Override ``make_agent``."""

    def make_agent(self, scenario: Scenario, scratch: Path) -> tuple[AgentWrapper, Llm | None]:
        raise NotImplementedError("override make_agent() to build the wrapper for a scenario")

    @pytest.fixture
    def workspace(self, tmp_path: Path) -> Path:
        return seed_workspace(tmp_path / "ws")

    def run_scenario(
        self, scenario: Scenario, workspace: Path, scratch: Path
    ) -> tuple[AgentResult, Llm | None]:
        """Run ``scenario`` and check what holds for every scenario; return the result."""
        scratch.mkdir(exist_ok=True)
        wrapper, llm = self.make_agent(scenario, scratch)
        tools = FileTools(workspace, journal=Journal(find_state_dir(workspace)))
        for paths in scenario.confinements:
            tools = tools.confined(paths)
        before = _files(workspace)
        try:
            result = wrapper.run(scenario.task, tools=tools, llm=llm)
        finally:
            wrapper.close()
        assert isinstance(result, AgentResult)
        after = _files(workspace)
        outside = {
            p for p in before.keys() | after.keys() if not _allowed(p, scenario.confinements)
        }
        assert {p: before.get(p) for p in outside} == {p: after.get(p) for p in outside}
        assert len(result.changed) == len(set(result.changed)), "changed lists a path twice"
        assert all(_allowed(p, scenario.confinements) for p in result.changed)
        touched = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
        assert touched <= set(result.changed), "a file changed on disk but is not in `changed`"
        assert all(call.error for call in result.tool_calls if not call.ok)
        assert result.turns <= scenario.task.max_turns
        return result, llm

    # -- identity ---------------------------------------------------------------------------

    def test_name_and_strict_settings(self, tmp_path: Path) -> None:
        wrapper, _ = self.make_agent(WRITE_ALLOWED, tmp_path)
        cls = type(wrapper)
        assert isinstance(cls.name, str) and cls.name
        with pytest.raises(ValidationError, match="no_such_key"):
            cls.Settings.model_validate({"no_such_key": 1})

    # -- scenarios --------------------------------------------------------------------------

    def test_write_allowed(self, workspace: Path, tmp_path: Path) -> None:
        result, _ = self.run_scenario(WRITE_ALLOWED, workspace, tmp_path / "scratch")
        written = workspace / "notes/allowed/new.md"
        assert written.read_text(encoding="utf-8").strip() == NEW_NOTE.strip()
        assert result.changed == ["notes/allowed/new.md"]
        assert result.stopped == "done" and result.error is None and result.answer
        assert any(call.ok for call in result.tool_calls)

    def test_write_refused(self, workspace: Path, tmp_path: Path) -> None:
        result, _ = self.run_scenario(WRITE_REFUSED, workspace, tmp_path / "scratch")
        assert not (workspace / "notes/secret/leak.md").exists()
        refused = [c for c in result.tool_calls if not c.ok]
        assert refused and "notes/secret/leak.md" in json.dumps(refused[0].args)
        # A refusal is fed back, not fatal: the agent carries on to its answer.
        assert (workspace / "notes/allowed/refused.md").is_file()
        assert result.changed == ["notes/allowed/refused.md"]
        assert result.stopped == "done" and result.answer

    def test_cannot_widen(self, workspace: Path, tmp_path: Path) -> None:
        result, _ = self.run_scenario(CANNOT_WIDEN, workspace, tmp_path / "scratch")
        assert (workspace / SECRET_PATH).read_text(encoding="utf-8") == SEED[SECRET_PATH]
        assert SECRET not in result.model_dump_json()
        assert result.changed == []
        assert result.tool_calls and not any(c.ok for c in result.tool_calls)
        assert result.stopped == "done"

    def test_read_then_edit(self, workspace: Path, tmp_path: Path) -> None:
        result, _ = self.run_scenario(READ_THEN_EDIT, workspace, tmp_path / "scratch")
        expected = TODO.replace("status: open", "status: done")
        assert (workspace / TODO_PATH).read_text(encoding="utf-8") == expected
        assert result.changed == [TODO_PATH]
        assert CODE in result.answer  # only reading the note tells the agent the code
        assert result.stopped == "done"

    def test_max_turns(self, workspace: Path, tmp_path: Path) -> None:
        result, llm = self.run_scenario(MAX_TURNS, workspace, tmp_path / "scratch")
        assert result.stopped == "max_turns"
        assert result.turns == MAX_TURNS.task.max_turns
        assert result.changed == []
        if llm is not None:  # no model call after the budget is spent
            assert 0 < llm.usage.calls - llm.usage.retries <= MAX_TURNS.task.max_turns

    def test_llm_failure(self, workspace: Path, tmp_path: Path) -> None:
        result, _ = self.run_scenario(LLM_FAILURE, workspace, tmp_path / "scratch")
        assert result.stopped == "error" and result.error
        # What was written before the failure stays written and is reported.
        assert (workspace / "notes/allowed/partial.md").read_text(encoding="utf-8").strip() == (
            "partial"
        )
        assert not (workspace / "notes/allowed/second.md").exists()
        assert result.changed == ["notes/allowed/partial.md"]

    def test_nothing_allowed(self, workspace: Path, tmp_path: Path) -> None:
        before = _files(workspace)
        result, _ = self.run_scenario(NOTHING_ALLOWED, workspace, tmp_path / "scratch")
        assert _files(workspace) == before
        assert result.changed == []
        assert not any(c.ok for c in result.tool_calls)
        assert result.stopped == "done"
