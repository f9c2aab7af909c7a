"""agent_cli against a fake ``claude`` on PATH: reme's agent-wrapper conformance kit, and what a
sandboxed CLI agent adds (a change that raced a hand edit is a conflict, not an overwrite)."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest
from reme_agent_cli import CliAgentWrapper

from reme_core.api import AgentTask, FileTools, Journal, Plugins, find_state_dir
from reme_core.testing import AgentWrapperConformance
from reme_core.testing.agent_wrapper import Answer, Call, Fail, Scenario, seed_workspace

FAKE = Path(__file__).with_name("fake_claude.py")


@pytest.fixture(autouse=True)
def fake_claude_on_path(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """``claude`` on PATH is the fake; each test's plan goes in FAKE_AGENT_PLAN."""
    bin_dir = tmp_path_factory.getbasetemp() / "bin"
    script = bin_dir / "claude"
    if not script.exists():
        bin_dir.mkdir(exist_ok=True)
        script.write_text(
            f"#!{sys.executable}\nimport runpy\nrunpy.run_path({str(FAKE)!r}, run_name='__main__')\n"
        )
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("FAKE_AGENT_PLAN", "")


def plan_file(steps: tuple, scratch: Path) -> Path:
    def step(move: object) -> dict:
        if isinstance(move, Call):
            return {"call": move.tool, "args": move.args}
        if isinstance(move, Fail):
            return {"fail": move.message}
        assert isinstance(move, Answer)
        return {"answer": move.text}

    path = scratch / "plan.json"
    path.write_text(json.dumps([step(m) for m in steps]), encoding="utf-8")
    return path


class TestCliAgentConformance(AgentWrapperConformance):
    def make_agent(self, scenario: Scenario, scratch: Path):
        os.environ["FAKE_AGENT_PLAN"] = str(plan_file(scenario.plan, scratch))
        return CliAgentWrapper(), None


def test_registers_as_agent_cli() -> None:
    import reme_agent_cli

    plugins = Plugins()
    plugins.register(reme_agent_cli, name="agent_cli")
    plugins.collect()
    assert plugins.get("agent_wrapper", "agent_cli") is CliAgentWrapper


def test_a_note_changed_during_the_run_is_a_conflict(tmp_path: Path) -> None:
    workspace = seed_workspace(tmp_path / "ws")
    tools = FileTools(workspace, journal=Journal(find_state_dir(workspace)))
    note = "notes/allowed/todo.md"
    racer = tmp_path / "racer.py"  # edits the real note while the agent works on its copy
    racer.write_text(
        "import pathlib, sys\n"
        f"p = pathlib.Path({str(workspace / note)!r})\n"
        "p.write_text(p.read_text().replace('open', 'by hand'))\n"
    )
    steps = (Call("edit", {"path": note, "old": "open", "new": "done"}), Answer("edited"))
    os.environ["FAKE_AGENT_PLAN"] = str(plan_file(steps, tmp_path))
    # The hand edit lands after the sandbox copy was made, before the agent's change comes back.
    command = ["sh", "-c", f"{sys.executable} {racer} && claude -p edit"]
    wrapper = CliAgentWrapper(CliAgentWrapper.Settings(command=command))
    result = wrapper.run(AgentTask(instructions="", prompt="edit"), tools=tools, llm=None)
    assert "status: by hand" in (workspace / note).read_text()  # the hand edit stands
    (refused,) = [c for c in result.tool_calls if not c.ok]
    assert refused.args == {"path": note} and "changed since it was read" in (refused.error or "")
    assert result.changed == []


def test_a_missing_agent_is_a_clear_error(tmp_path: Path) -> None:
    workspace = seed_workspace(tmp_path / "ws")
    tools = FileTools(workspace, journal=Journal(find_state_dir(workspace)))
    wrapper = CliAgentWrapper(
        CliAgentWrapper.Settings(command=["no-such-agent-xyz", "-p", "{prompt}"])
    )
    result = wrapper.run(AgentTask(instructions="", prompt="hi"), tools=tools, llm=None)
    assert result.stopped == "error" and "no-such-agent-xyz" in (result.error or "")
    assert result.changed == []


def test_auto_resource_runs_through_it_in_agentic_mode(tmp_path: Path) -> None:
    import datetime as dt

    import reme_agent_cli

    from reme_core.api import Reme, init_workspace, load_plugins, parse_note

    root = tmp_path / "ws"
    init_workspace(root)
    (root / "resource").mkdir(exist_ok=True)
    (root / "resource/runbook.md").write_text("# Runbook\n\nShip with `make ship`.\n")
    note = f"daily/{dt.datetime.now(dt.UTC).date().isoformat()}/resource-runbook.md"
    content = "---\nname: Runbook\ndescription: How to ship.\n---\n\n# Runbook\n\nmake ship.\n"
    steps = (Call("write", {"path": note, "content": content}), Answer("done"))
    os.environ["FAKE_AGENT_PLAN"] = str(plan_file(steps, tmp_path))
    plugins = load_plugins()
    if "agent_cli" not in plugins.registry("agent_wrapper"):
        plugins.register(reme_agent_cli, name="agent_cli")
        plugins.collect()
    overrides = [
        "timezone=UTC",
        "components.embedding=null",
        "components.file_store=null",
        "components.agent_wrapper={name: agent_cli}",
        "pipelines.auto_resource.steps=[{name: auto_resource, settings: {mode: agentic}}]",
    ]
    with Reme.open(root, plugins=plugins, overrides=overrides, env={}) as reme:
        out = reme.run("auto_resource", {}).outputs
    assert out["notes"] == [{"resource": "resource/runbook.md", "note": note, "action": "created"}]
    front = parse_note(note, (root / note).read_text()).frontmatter
    assert front["name"] == "Runbook" and front["source_resource"] == "[[resource/runbook.md]]"
