"""`reme dream`: the per-unit table, --json, --dry-run, failures and a missing model."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from pipelines.test_dream_support import (
    DEPLOY,
    DEPLOY_NODE,
    PREFS,
    Workspace,
    decision,
    extraction,
    plugins,
)
from reme_core import plugins as plugin_module
from reme_core.cli import RemeGroup, attach_plugin_commands

MIRA = "digest/personal/mira.md"
SCRIPT = [
    extraction(PREFS, DEPLOY),
    decision("CREATE", MIRA, content="# Mira\n\nShort answers.\n"),
    decision("REFINE", "digest/procedure/deploy.md", content="# gutted\n"),
]


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Workspace]:
    workspace = Workspace(tmp_path)
    workspace.script_file.write_text(json.dumps(SCRIPT), encoding="utf-8")
    # The CLI opens the workspace itself: hand it the test plugins, not the installed ones.
    monkeypatch.setattr(plugin_module, "_plugins", plugins())
    yield workspace
    workspace.close()


@pytest.fixture
def cli() -> click.Group:
    group = RemeGroup("reme")
    attach_plugin_commands(group, plugins())  # registered through register_commands
    return group


def dream(cli: click.Group, ws: Workspace, *args: str, llm: bool = True) -> Result:
    sets = ["--set", ws.pipeline]
    if llm:
        sets += [
            "--set",
            f"components.llm={{name: scripted, settings: {{path: {ws.script_file}}}}}",
        ]
    return CliRunner().invoke(cli, ["dream", "-w", str(ws.root), *sets, *args])


def test_prints_a_row_per_unit_and_fails_when_a_unit_failed(cli: click.Group, ws: Workspace):
    result = dream(cli, ws)
    assert result.exit_code == 1  # a unit failed: it stays queued, the run says so
    lines = result.output.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("UNIT"))
    assert lines[header].split() == ["UNIT", "VERB", "TARGET", "RESULT", "REASON"]
    created, refused = lines[header + 1], lines[header + 2]
    assert created.startswith(PREFS["name"]) and created.split()[-3:] == ["CREATE", MIRA, "applied"]
    assert refused.startswith(DEPLOY["name"])
    assert "REFINE  digest/procedure/deploy.md  failed" in refused and "drops links" in refused
    assert "1 applied, 1 failed" in result.output
    assert "1 unit(s) queued (1 failed)" in result.output
    assert "1 unit(s) or batch(es) failed; the next run retries them" in result.output
    assert ws.read("digest/procedure/deploy.md") == DEPLOY_NODE
    assert (ws.root / MIRA).is_file()


def test_json_output(cli: click.Group, ws: Workspace):
    result = dream(cli, ws, "--json")
    stdout = result.output.split("\n1 unit(s) or batch(es) failed")[0]
    data = json.loads(stdout)
    assert data["pipeline"] == "dream" and data["verbs"] == [f"CREATE {MIRA}"]
    rows = [(d["verb"], d["target"], d["result"]) for d in data["outputs"]["decisions"]]
    assert rows == [
        ("CREATE", MIRA, "applied"),
        ("REFINE", "digest/procedure/deploy.md", "failed"),
    ]
    assert data["outputs"]["changed"] == [MIRA]


def test_dry_run_writes_nothing(cli: click.Group, ws: Workspace):
    ws.script_file.write_text(json.dumps([extraction(PREFS), SCRIPT[1]]), encoding="utf-8")
    before = ws.tree()
    result = dream(cli, ws, "--dry-run", "--date", "2026-11-03")
    assert result.exit_code == 0, result.output
    assert "dry run: nothing written" in result.output
    assert f"CREATE  {MIRA}  dry-run" in result.output
    assert ws.tree() == before and not (ws.root / ".reme/dream").exists()


def test_without_a_model_it_says_what_to_set(cli: click.Group, ws: Workspace):
    result = dream(cli, ws, llm=False)
    assert result.exit_code == 2
    assert "dream needs a model: set components.llm" in result.output
    assert not (ws.root / ".reme/dream").exists()


def test_nothing_to_do(cli: click.Group, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    ws = Workspace(tmp_path, notes={})
    ws.script_file.write_text("[]", encoding="utf-8")
    monkeypatch.setattr(plugin_module, "_plugins", plugins())
    result = dream(cli, ws)
    assert result.exit_code == 0, result.output
    assert (
        "0 changed note(s), 0 unit(s)" in result.output
        and "nothing to consolidate" in result.output
    )
