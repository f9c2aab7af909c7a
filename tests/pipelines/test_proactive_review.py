"""proactive with ``review: queue``: a run proposes its whole change and writes nothing; approval
verifies it again and writes both files as one history entry; a rejection is remembered (the
notes are not proposed again until they change); a hand edit makes the proposal stale."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pipelines.test_proactive_support import (
    DEPLOY,
    HEALTHZ,
    NOTE,
    QUESTION,
    TOPICS,
    Workspace,
    event,
    new,
)
from reme_core.api import ReviewApi, topic_id

TOPIC = topic_id(QUESTION, DEPLOY)


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    workspace = Workspace(tmp_path, "pipelines.proactive.review=queue")
    workspace.write(DEPLOY)
    yield workspace
    workspace.close()


def test_a_run_proposes_and_approval_writes_both_files(ws: Workspace):
    before = ws.tree()
    result = ws.run(new())
    (proposal,) = result.outputs["proposals"]
    assert proposal["status"] == "pending" and result.outputs["written"] == []
    assert ws.tree() == before  # nothing written, the cursor not advanced
    found = ReviewApi(ws.reme).show(proposal["id"])
    assert found.target == NOTE and found.verb == "CREATE" and found.sources == [DEPLOY]
    assert QUESTION in found.content and found.note == "follow-ups: 1 new"
    assert "no topic dropped (0 before, 1 after)" in found.verdict

    waiting = ws.run()  # an empty script: a second proposal would go stale with the first
    assert waiting.outputs["waiting"] == proposal["id"] and ws.llm.calls == []

    approved = ReviewApi(ws.reme).approve([proposal["id"]])
    assert [o.id for o in approved.succeeded] == [proposal["id"]], approved.refused
    assert [t["id"] for t in ws.topics()] == [TOPIC] and QUESTION in ws.read(NOTE)
    entry = ws.reme.history.entries(1)[0]
    assert {TOPICS, NOTE} <= set(entry.files) and f"NEW {TOPIC}" in entry.verbs
    assert ws.run().outputs["pending"] == []  # the cursor moved with the approval


def test_a_rejected_change_is_not_proposed_again(ws: Workspace):
    proposal = ws.run(new()).outputs["proposals"][0]
    before = ws.tree()
    rejected = ReviewApi(ws.reme).reject([proposal["id"]], reason="not a real follow-up")
    assert [o.id for o in rejected.succeeded] == [proposal["id"]]
    assert {k: v for k, v in ws.tree().items() if k != ".reme/proactive/cursor.json"} == {
        k: v for k, v in before.items() if k != ".reme/proactive/cursor.json"
    }
    assert not (ws.root / TOPICS).exists()
    again = ws.run()  # nothing asked: the note was handled by the rejection
    assert again.outputs["pending"] == [] and ws.llm.calls == []


def test_a_hand_edit_makes_the_proposal_stale_and_the_notes_are_read_again(ws: Workspace):
    first = ws.run(new()).outputs["proposals"][0]
    ReviewApi(ws.reme).approve([first["id"]])  # a first topic, approved
    ws.write(HEALTHZ)
    proposal = ws.run(event("resolved", TOPIC, HEALTHZ)).outputs["proposals"][0]
    snoozed = "\n  state: snoozed\n  snoozed_until: '2026-12-01'"
    ws.write(TOPICS, ws.read(TOPICS).replace("\n  state: open", snoozed))  # by hand
    outcome = ReviewApi(ws.reme).approve([proposal["id"]])
    (refused,) = outcome.refused
    assert refused.status == "stale" and "changed since the proposal" in refused.reason
    assert ws.topics()[0]["state"] == "snoozed"
    retry = ws.run(event("resolved", TOPIC, HEALTHZ))
    assert retry.outputs["read"] == [HEALTHZ] and retry.outputs["proposals"]
