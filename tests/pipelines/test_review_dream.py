"""dream with `review: queue`: proposals instead of writes, approval through the same verifier,
rejection remembered, stale proposals refused and re-proposed, bulk approval by verb."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import KEYWORD_ONLY_ENV

from pipelines.test_dream_support import (
    DEPLOY,
    DEPLOY_NODE,
    NOTES,
    POSTGRES,
    PREFS,
    Workspace,
    decision,
    edit,
    extraction,
)
from reme_core.errors import ConfigError, NotFoundError, WorkspaceError
from reme_core.runtime import Reme
from reme_core.settings import load_settings
from reme_core.workspace.hashing import content_hash
from reme_plugins.dream.cli import render

QUEUE = "pipelines.dream.review=queue"
MIRA = "digest/personal/mira.md"
DEPLOY_PATH = "digest/procedure/deploy.md"
POSTGRES_PATH = "digest/wiki/postgres.md"
CREATE_MIRA = decision("CREATE", MIRA, content="# Mira\n\nShort answers, command first.\n")
CORROBORATE_DEPLOY = decision("CORROBORATE", DEPLOY_PATH)
REFINE_POSTGRES = decision(
    "REFINE",
    POSTGRES_PATH,
    edit=edit(
        "- work_mem is 4MB for every connection.",
        "- work_mem is 16MB for every connection (sorts spilled to disk at 4MB).",
    ),
)


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    workspace = Workspace(tmp_path)
    yield workspace
    workspace.close()


def queued(ws: Workspace, script: list[Any], *extra: str, **params: Any) -> Any:
    return ws.open(script, extra=[QUEUE, *extra]).run("dream", params)


def proposals_dir(ws: Workspace) -> Path:
    return ws.root / ".reme" / "proposals"


def test_queue_writes_proposals_and_leaves_the_notes_byte_identical(ws: Workspace):
    before = ws.tree()
    result = queued(ws, [extraction(PREFS, DEPLOY), CREATE_MIRA, CORROBORATE_DEPLOY])
    assert ws.tree() == before  # not a byte of any note changed
    assert result.verbs == [] and result.history is None
    created, corroborated = result.outputs["decisions"]
    assert created["result"] == corroborated["result"] == "proposed"
    assert result.outputs["proposals"] == [created["proposal"], corroborated["proposal"]]
    assert result.outputs["written"] == [] and result.outputs["changed"] == []

    files = sorted(p.name for p in proposals_dir(ws).iterdir())
    assert files == sorted(f"{p}.json" for p in result.outputs["proposals"])
    stored = json.loads((proposals_dir(ws) / f"{created['proposal']}.json").read_text())
    assert stored["verb"] == "CREATE" and stored["target"] == MIRA
    assert stored["pipeline"] == "dream" and stored["step"] == "dream_integrate"
    assert stored["run_id"] == result.run_id and stored["status"] == "pending"
    assert stored["base_hash"] is None and stored["sources"] == PREFS["sources"]
    assert stored["diff"].startswith(f"--- /dev/null\n+++ b/{MIRA}\n")
    assert "+- [[daily/2026-11-03/prefs]]" in stored["diff"]
    assert "the new node says something" in stored["verdict"]

    listed = ws.reme.review.list()
    assert [p.id for p in listed.proposals] == result.outputs["proposals"]
    assert listed.counts == {"pending": 2, "approved": 0, "rejected": 0, "stale": 0}
    assert all(p.target_changed is False for p in listed.proposals)
    shown = ws.reme.review.show(corroborated["proposal"])
    assert shown.base_hash == content_hash(DEPLOY_NODE.encode()) == shown.current_hash
    assert "+- [[daily/2026-11-02/deploy]]" in shown.diff
    assert "CORROBORATE only adds source links" in shown.verdict

    # The units are handled pending review: the notes are checkpointed, nothing is queued.
    checkpoint = ws.checkpoint()
    assert set(checkpoint["notes"]) == set(NOTES) and checkpoint["queue"] == []
    text = render(result)  # what `reme dream` prints
    assert "2 proposed" in text and "2 change(s) proposed, nothing written" in text


def test_approve_applies_exactly_the_proposed_content_and_records_it(ws: Workspace):
    result = queued(ws, [extraction(PREFS, DEPLOY), CREATE_MIRA, CORROBORATE_DEPLOY])
    first, second = result.outputs["proposals"]
    proposed = ws.reme.review.show(first)

    done = ws.reme.review.approve([first], by="mira")
    (outcome,) = done.succeeded
    assert done.refused == [] and outcome.status == "approved"
    assert ws.read(MIRA) == proposed.content  # exactly the proposed content
    assert outcome.content_hash == proposed.content_hash
    assert "the target is as it was when proposed" in outcome.verdict
    assert "the new node says something" in outcome.verdict  # verified again
    entry = ws.reme.history.entries(1)[0]
    assert entry.run == outcome.history and entry.kind == "run"
    assert entry.message.startswith(f"reme run dream (review: approve {first})")
    assert f"CREATE {MIRA}" in entry.verbs
    # Indexed before it returns.
    assert any(h.path == MIRA for h in ws.reme.search("short answers command first").hits)

    after = ws.reme.review.show(first)
    assert after.status == "approved" and after.decided_by == "mira"
    assert after.history == outcome.history
    # Approving twice is refused; the other proposal still waits.
    again = ws.reme.review.approve([first])
    assert again.succeeded == [] and again.refused[0].reason == "already approved"
    assert [p.id for p in ws.reme.review.list().proposals] == [second]


def test_reject_records_the_reason_and_the_unit_is_not_proposed_again(ws: Workspace):
    result = queued(ws, [extraction(PREFS), CREATE_MIRA])
    (proposal,) = result.outputs["proposals"]
    before = ws.tree()
    rejected = ws.reme.review.reject([proposal], reason="  a one-off,\nnot a preference ", by="ana")
    (outcome,) = rejected.succeeded
    assert outcome.status == "rejected" and outcome.reason == "a one-off, not a preference"
    assert ws.tree() == before
    shown = ws.reme.review.show(proposal)
    assert (shown.status, shown.reason, shown.decided_by) == (
        "rejected",
        "a one-off, not a preference",
        "ana",
    )
    (unit_id,) = ws.checkpoint()["rejected"]
    assert ws.checkpoint()["rejected"][unit_id]["proposal"] == proposal

    # The daily note forgets its checkpoint (a run died before dream_finish, say): the same unit
    # is extracted again from the unchanged source, and left out rather than proposed again.
    data = ws.checkpoint()
    data["notes"].pop("daily/2026-11-03/prefs.md")
    (ws.root / ".reme/dream/checkpoint.json").write_text(json.dumps(data))
    again = queued(ws, [extraction(PREFS)])
    assert again.outputs["decisions"] == [] and again.outputs["proposals"] == []
    (held,) = again.outputs["reviewed"]
    assert held["unit"] == unit_id and "rejected in review" in held["reason"]
    assert ws.llm.prompts("Decision") == []  # the model is not asked again
    assert [p.id for p in ws.reme.review.list("all").proposals] == [proposal]

    # Switching back to `apply` does not apply it either.
    plain = ws.open([extraction(PREFS)]).run("dream", {})
    assert plain.outputs["decisions"] == [] and not (ws.root / MIRA).exists()


def test_the_same_change_rejected_before_is_not_proposed_again(ws: Workspace):
    result = queued(ws, [extraction(PREFS), CREATE_MIRA])
    (proposal,) = result.outputs["proposals"]
    ws.reme.review.reject([proposal], reason="wrong bucket")
    # The rejection is forgotten by dream (its checkpoint moved aside), but the proposal store
    # still knows the exact change: the model's identical decision is not queued again.
    (ws.root / ".reme/dream/checkpoint.json").unlink()
    again = queued(ws, [extraction(PREFS), CREATE_MIRA])
    (outcome,) = again.outputs["decisions"]
    assert outcome["result"] == "rejected" and outcome["proposal"] == proposal
    assert "wrong bucket" in outcome["reason"]
    assert len(list(proposals_dir(ws).iterdir())) == 1


def test_a_target_changed_since_is_refused_as_stale_and_proposed_again(ws: Workspace):
    result = queued(ws, [extraction(DEPLOY), CORROBORATE_DEPLOY])
    (proposal,) = result.outputs["proposals"]
    edited = DEPLOY_NODE.replace("watch the journal", "watch the journal and the dashboard")
    ws.write(DEPLOY_PATH, edited)  # a person edits the node meanwhile
    assert ws.reme.review.list().proposals[0].target_changed is True

    refused = ws.reme.review.approve([proposal])
    (outcome,) = refused.refused
    assert refused.succeeded == [] and outcome.status == "stale"
    assert outcome.reason == f"{DEPLOY_PATH} changed since the proposal"
    assert ws.read(DEPLOY_PATH) == edited  # nothing written
    assert ws.reme.review.show(proposal).status == "stale"
    # dream gets the unit back, to be integrated against the node as it is now.
    (waiting,) = ws.checkpoint()["queue"]
    assert waiting["status"] == "pending" and proposal in waiting["reason"]

    again = queued(ws, [CORROBORATE_DEPLOY])
    (outcome,) = again.outputs["decisions"]
    assert outcome["result"] == "proposed" and outcome["proposal"] != proposal
    assert ws.reme.review.show(outcome["proposal"]).base_hash == content_hash(edited.encode())
    assert ws.reme.review.approve([outcome["proposal"]]).succeeded
    assert "watch the journal and the dashboard" in ws.read(DEPLOY_PATH)
    assert "- [[daily/2026-11-02/deploy]]" in ws.read(DEPLOY_PATH)


def test_a_create_whose_file_appeared_since_is_stale(ws: Workspace):
    result = queued(ws, [extraction(PREFS), CREATE_MIRA])
    (proposal,) = result.outputs["proposals"]
    ws.write(MIRA, "# Mira\n\nWritten by hand.\n")
    (outcome,) = ws.reme.review.approve([proposal]).refused
    assert outcome.status == "stale" and "was created since" in outcome.reason
    assert ws.read(MIRA) == "# Mira\n\nWritten by hand.\n"


def test_bulk_approve_by_verb_verifies_each_one(ws: Workspace):
    script = [
        extraction(PREFS, DEPLOY, POSTGRES),
        CREATE_MIRA,
        CORROBORATE_DEPLOY,
        decision("CORROBORATE", POSTGRES_PATH),
    ]
    result = queued(ws, script)
    create, deploy, postgres = result.outputs["proposals"]
    ws.write(POSTGRES_PATH, ws.read(POSTGRES_PATH) + "\nEdited by hand.\n")

    done = ws.reme.review.approve(verb="CORROBORATE")
    assert [o.id for o in done.succeeded] == [deploy]
    assert [(o.id, o.status) for o in done.refused] == [(postgres, "stale")]
    assert "- [[daily/2026-11-02/deploy]]" in ws.read(DEPLOY_PATH)
    assert "daily/2026-11-04/postgres" not in ws.read(POSTGRES_PATH)
    assert not (ws.root / MIRA).exists()  # another verb: untouched
    assert [p.id for p in ws.reme.review.list().proposals] == [create]
    with pytest.raises(WorkspaceError, match="name the proposals"):
        ws.reme.review.approve()
    with pytest.raises(WorkspaceError, match="not both"):
        ws.reme.review.approve([create], verb="CREATE")


def test_a_proposal_that_no_longer_verifies_is_stale(ws: Workspace):
    result = queued(ws, [extraction(DEPLOY), CORROBORATE_DEPLOY])
    (proposal,) = result.outputs["proposals"]
    # Someone tampers with the stored proposal: the content no longer matches the decision.
    path = proposals_dir(ws) / f"{proposal}.json"
    data = json.loads(path.read_text())
    data["content"] = data["content"].replace("Merge to main", "Push to main")
    path.write_text(json.dumps(data))
    (outcome,) = ws.reme.review.approve([proposal]).refused
    assert outcome.status == "stale" and "no longer verifies" in outcome.reason
    assert ws.read(DEPLOY_PATH) == DEPLOY_NODE


def test_pending_units_are_not_integrated_again(ws: Workspace):
    result = queued(ws, [extraction(PREFS), CREATE_MIRA])
    (proposal,) = result.outputs["proposals"]
    data = ws.checkpoint()
    data["notes"] = {}
    (ws.root / ".reme/dream/checkpoint.json").write_text(json.dumps(data))
    again = queued(ws, [extraction(PREFS)])
    assert again.outputs["decisions"] == []
    assert f"proposal {proposal} waits for review" in again.outputs["reviewed"][0]["reason"]


def test_refine_and_dry_run(ws: Workspace):
    dry = queued(ws, [extraction(POSTGRES), REFINE_POSTGRES], dry_run=True)
    assert dry.outputs["decisions"][0]["result"] == "dry-run"
    assert not proposals_dir(ws).exists()
    result = queued(ws, [extraction(POSTGRES), REFINE_POSTGRES])
    (proposal,) = result.outputs["proposals"]
    shown = ws.reme.review.show(proposal)
    assert "-- work_mem is 4MB for every connection." in shown.diff
    assert "at most one passage is rewritten, keeping most of it" in shown.verdict
    assert ws.reme.review.approve([proposal]).succeeded
    assert "work_mem is 16MB" in ws.read(POSTGRES_PATH)


def test_unknown_and_malformed_ids(ws: Workspace):
    queued(ws, [extraction(PREFS), CREATE_MIRA])
    with pytest.raises(NotFoundError):
        ws.reme.review.show("abcdef123456")
    with pytest.raises(WorkspaceError, match="not a proposal id"):
        ws.reme.review.show("../token")
    with pytest.raises(WorkspaceError, match="needs a reason"):
        ws.reme.review.reject(verb="CREATE", reason="  ")


def test_queue_on_a_pipeline_whose_steps_cannot_propose_is_a_config_error(tmp_path: Path):
    root = tmp_path / "ws"
    (root / ".reme").mkdir(parents=True)
    overrides = ["pipelines.auto_memory.review=queue"]
    with Reme.open(root, overrides=overrides, env=KEYWORD_ONLY_ENV) as reme:
        message = r"pipelines\.auto_memory\.review: queue, but step\(s\) 'auto_memory'"
        with pytest.raises(ConfigError, match=message):
            reme.run("auto_memory", {"session_id": "s1", "messages": []})
    assert not (root / "sessions").exists()  # refused before any step ran


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("pipelines.dream.review", "later"),
        ("pipelines.auto_tag.review", "yes"),
        ("memory.review", 1),
    ],
)
def test_an_invalid_review_value_is_a_config_error_naming_the_key(key: str, value: object):
    with pytest.raises(ConfigError) as info:
        load_settings(overrides=[f"{key}={value}"], env={})
    message = str(info.value)
    assert message.startswith(f"{key}:") and "'apply' or 'queue'" in message
    assert f"--set {key}={value}" in message


def test_review_defaults_to_apply():
    settings = load_settings(env={})
    assert {p.review for p in settings.pipelines.values()} == {"apply"}
    assert settings.memory.review == "apply"
