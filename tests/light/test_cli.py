"""`reme context ...` on messages files, run in-process under a RemeGroup as the CLI wires it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import reme_core.cli.context_cmd as context_cli
import reme_core.runtime
from reme_core.cli import RemeGroup
from reme_core.plugins import Plugins
from tests.light.msgs import assistant, tool, user


@pytest.fixture
def run(plugins: Plugins, monkeypatch: pytest.MonkeyPatch, root: Path):
    # The commands load installed plugins; here they get the test's, whatever is installed.
    monkeypatch.setattr(context_cli, "load_plugins", lambda: plugins)
    monkeypatch.setattr(reme_core.runtime, "load_plugins", lambda: plugins)
    group = RemeGroup("reme")
    for command in context_cli.COMMANDS:
        group.add_command(command)

    def invoke(*args: str, input: str | None = None) -> Result:
        return CliRunner().invoke(group, list(args), input=input, catch_exceptions=False)

    return invoke


def write(tmp_path: Path, messages: Any) -> str:
    path = tmp_path / "messages.json"
    path.write_text(json.dumps(messages), encoding="utf-8")
    return str(path)


def conversation() -> list[dict]:
    return [m for n in range(6) for m in (user(f"q{n} " + "word " * 100), assistant(f"a{n}"))]


def test_count_and_check(run, tmp_path: Path):
    path = write(tmp_path, {"messages": conversation()})
    counted = json.loads(run("context", "count", path, "--json").stdout)
    assert counted["tokenizer"] == "estimate/o200k_base" and len(counted["messages"]) == 12
    assert counted["total_tokens"] == sum(counted["messages"])
    out = json.loads(
        run("context", "check", path, "--threshold", "300", "--reserve", "250", "--json").stdout
    )
    assert out["is_valid"] and out["keep_tokens"] <= 250 and out["keep_from"] % 2 == 0
    assert out["compact"] == list(range(out["keep_from"]))
    text = run("context", "check", path, "--threshold", "300", "--reserve", "250").stdout
    assert f"compact messages 0-{out['keep_from'] - 1}" in text
    fits = run("context", "check", "-", "--threshold", "100000", input=json.dumps(conversation()))
    assert "fits, nothing to compact" in fits.stdout
    cl100k = run(
        "context",
        "count",
        path,
        "--json",
        "--set",
        "components.tokenizer.settings.encoding=cl100k_base",
    )
    assert json.loads(cl100k.stdout)["tokenizer"] == "estimate/cl100k_base"


def test_bad_input_is_a_one_line_error(run, tmp_path: Path):
    bad = run(
        "context", "check", write(tmp_path, [{"role": "tool", "content": "x"}]), "--threshold", "5"
    )
    assert bad.exit_code != 0 and "tool_call_id" in bad.stderr and "Traceback" not in bad.output
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{not json", encoding="utf-8")
    assert "is not JSON" in run("context", "count", str(garbage)).stderr


def test_compact_tool_results_spills_into_the_workspace(run, tmp_path: Path, root: Path):
    big = "row\n" * 5000
    messages = [user("go"), assistant(None, [("t1", "sql")]), tool("t1", big), assistant("done")]
    path = write(tmp_path, messages)
    result = run("context", "compact-tool-results", path, "--recent-n", "0", "-w", str(root))
    out = json.loads(result.stdout)
    assert out[2]["tool_call_id"] == "t1" and len(out[2]["content"]) < 3300
    assert (root / "tool_results" / "t1.txt").read_text("utf-8") == big
    report = json.loads(
        run(
            "context", "compact-tool-results", path, "--recent-n", "0", "-w", str(root), "--json"
        ).stdout
    )
    assert report["cut"] == ["t1"] and report["spilled"] == []


def test_compact_without_a_model_prints_the_fallback_summary(run, tmp_path: Path, root: Path):
    messages = [user("fix src/app.py"), assistant("KeyError: 'user_id' in load_user()")]
    result = run(
        "context", "compact", write(tmp_path, messages), "-w", str(root), "--language", "zh"
    )
    assert result.exit_code == 0
    assert "## 目标" in result.stdout and "src/app.py" in result.stdout
    assert "warning: no model configured" in result.stderr
