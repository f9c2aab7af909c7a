"""The README's proactive walk-through, command for command: examples/proactive's notes copied
in one day at a time, `reme proactive run` on each day's script, `reme proactive list`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner
from conftest import KEYWORD_ONLY_ENV

from reme_core.cli import cli
from reme_core.workspace import init_workspace
from tests.fake_llm import RecordingLlm, plugins_with

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "proactive"
DAYS = [
    ("2026-11-02/deploy.md", "1-open.json"),
    ("2026-11-03/healthz.md", "2-resolve.json"),
    ("2026-11-05/outage.md", "3-again.json"),
]


def test_topics_open_resolve_and_come_back(tmp_path: Path, monkeypatch):
    root = tmp_path / "followups"
    init_workspace(root)
    monkeypatch.setattr("reme_core.plugins._plugins", plugins_with(RecordingLlm))
    env = {**KEYWORD_ONLY_ENV, "REME_TOKEN": "", "REME_LOCAL": ""}

    def reme(*args: str) -> str:
        result = CliRunner().invoke(cli, [*args, "-w", str(root)], env=env)
        assert result.exit_code == 0, result.output
        return result.output

    states = []
    for note, script in DAYS:
        (root / "daily" / note).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(EXAMPLE / "notes" / note, root / "daily" / note)
        llm = f"components.llm={{name: scripted, settings: {{path: {EXAMPLE / script}}}}}"
        reme("proactive", "run", "--set", llm)
        listed = json.loads(reme("proactive", "list", "--state", "all", "--json"))
        states.append({t["text"]: t["state"] for t in listed["topics"]})
    fixed, rota = (
        "Check whether v0.9.4 fixed the 502s on /healthz",
        ("Who owns the on-call rota for December?"),
    )
    assert states == [
        {fixed: "open", rota: "open"},
        {fixed: "resolved", rota: "open"},
        {fixed: "open", rota: "resolved"},  # the 502s came back; Sam owns the rota
    ]
    note = (root / "daily" / "_proactive.md").read_text(encoding="utf-8")
    assert fixed in note and rota not in note and "[[daily/2026-11-05/outage]]" in note
