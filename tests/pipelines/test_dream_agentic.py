"""dream_integrate in mode agentic: the agent wrapper (toolloop on the scripted model) edits a
node; its edit is put back and goes through the verifier as a decision before it is written."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipelines.test_dream_support import DEPLOY, DEPLOY_NODE, PREFS, Workspace, extraction
from reme_core.errors import ConfigError
from reme_core.pipelines.engine import PipelineError

MIRA = "digest/personal/mira.md"
MIRA_NOTE = "---\nname: Mira\ndescription: How Mira likes answers.\n---\n\n# Mira\n\nShort answers, command first.\n"
DEPLOY_PATH = "digest/procedure/deploy.md"
TOOLLOOP = "components.agent_wrapper={name: toolloop}"


def write(path: str, content: str) -> dict:
    return {"tool": "write", "args": {"path": path, "content": content}}


def answer(verb: str, target: str) -> dict:
    return {"answer": json.dumps({"verb": verb, "target": target, "note": "for the test"})}


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    workspace = Workspace(tmp_path, integrate={"mode": "agentic"})
    yield workspace
    workspace.close()


def run(ws: Workspace, script: list, **params: object):
    return ws.open(script, extra=[TOOLLOOP]).run("dream", params)


def test_a_node_the_agent_creates_is_verified_then_written(ws: Workspace):
    result = run(ws, [extraction(PREFS), write(MIRA, MIRA_NOTE), answer("CREATE", MIRA)])
    (outcome,) = result.outputs["decisions"]
    assert outcome["result"] == "applied" and outcome["verb"] == "CREATE"
    text = ws.read(MIRA)
    # The core's part of every verb: the unit's sources linked under ## Sources.
    assert "Short answers, command first." in text and "[[daily/2026-11-03/prefs]]" in text
    assert result.outputs["written"] == [MIRA]


def test_an_edit_that_drops_a_link_is_put_back_and_fails(ws: Workspace):
    before = ws.tree()
    dropped = DEPLOY_NODE.replace("; the layout is in [[digest/wiki/architecture]]", "")
    result = run(
        ws, [extraction(DEPLOY), write(DEPLOY_PATH, dropped), answer("REFINE", DEPLOY_PATH)]
    )
    (outcome,) = result.outputs["decisions"]
    assert outcome["result"] == "failed" and "drops links" in outcome["reason"]
    assert ws.read(DEPLOY_PATH) == DEPLOY_NODE  # the agent's edit did not stay
    assert ws.tree() == before


def test_an_agent_that_changes_two_files_is_refused(ws: Workspace):
    before = ws.tree()
    refined = DEPLOY_NODE.replace("3. Restart", "3. Regenerate requirements.lock.\n4. Restart")
    script = [
        extraction(DEPLOY),
        write(DEPLOY_PATH, refined),
        write("digest/procedure/extra.md", "---\nname: X\ndescription: Y\n---\n\nZ\n"),
        answer("REFINE", DEPLOY_PATH),
    ]
    (outcome,) = run(ws, script).outputs["decisions"]
    assert outcome["result"] == "failed" and "only the target may change" in outcome["reason"]
    assert ws.tree() == before  # both put back


def test_an_answer_that_is_not_a_decision_is_rejected(ws: Workspace):
    (outcome,) = run(ws, [extraction(PREFS), {"answer": "I think I am done"}]).outputs["decisions"]
    assert outcome["result"] == "failed" and "answer with one JSON object" in outcome["reason"]


def test_agentic_mode_needs_a_wrapper_and_refuses_dry_runs(ws: Workspace):
    with pytest.raises((ConfigError, PipelineError), match=r"needs components\.agent_wrapper"):
        ws.open([extraction(PREFS)], extra=["components.agent_wrapper=null"]).run("dream", {})
    with pytest.raises(PipelineError, match="dry-run needs mode structured"):
        run(ws, [extraction(PREFS)], dry_run=True)
