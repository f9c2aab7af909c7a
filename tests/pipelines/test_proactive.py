"""The proactive pipeline with the scripted model: topics open, resolve and come back open; ids
are reme's and stable; bad answers are rejected with nothing written and the notes left to
retry; history records each change and reverting it is undone by the next run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipelines.test_proactive_support import (
    AGAIN,
    CURSOR,
    DEPLOY,
    HEALTHZ,
    NOTE,
    QUESTION,
    TOPICS,
    Workspace,
    event,
    new,
)
from reme_core.api import ProactiveTopic, ProactiveTopics, topic_id
from reme_core.errors import ConfigError
from reme_plugins.proactive.models import Rejected
from reme_plugins.proactive.update import verify

TOPIC = topic_id(QUESTION, DEPLOY)


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    workspace = Workspace(tmp_path)
    workspace.write(DEPLOY)
    yield workspace
    workspace.close()


def test_a_topic_opens_resolves_and_comes_back_open_with_the_new_evidence(ws: Workspace):
    first = ws.run(new())
    assert first.outputs["new"] == [TOPIC] and first.outputs["open"] == 1
    (topic,) = ws.topics()
    assert topic == {
        "id": TOPIC,
        "text": QUESTION,
        "kind": "task",
        "state": "open",
        "notes": ["[[daily/2026-11-02/deploy]]"],
        "first_seen": "2026-11-02",
        "last_seen": "2026-11-02",
    }
    assert f"- {QUESTION} (task, `{TOPIC}`" in ws.read(NOTE)
    prompt = ws.llm.prompts("Answer")[0]
    assert DEPLOY in prompt and "(none yet)" in prompt

    ws.write(HEALTHZ)
    second = ws.run(event("resolved", TOPIC, HEALTHZ, how="healthz answers 200"))
    assert second.outputs["resolved"] == [TOPIC] and second.outputs["read"] == [HEALTHZ]
    (topic,) = ws.topics()
    assert topic["state"] == "resolved" and topic["resolved_by"] == "[[daily/2026-11-03/healthz]]"
    assert topic["resolution"] == "healthz answers 200" and topic["last_seen"] == "2026-11-03"
    assert QUESTION not in ws.read(NOTE) and "Nothing open" in ws.read(NOTE)
    # The model saw the topic it resolved, by the id reme gave it; only the new note was sent.
    prompt = ws.llm.prompts("Answer")[0]
    assert f"- {TOPIC} [open] {QUESTION}" in prompt and DEPLOY not in prompt.split("Notes")[1]

    ws.write(AGAIN)
    third = ws.run(event("mentioned", TOPIC, AGAIN))
    assert third.outputs["reopened"] == [TOPIC]
    (topic,) = ws.topics()
    assert topic["id"] == TOPIC and topic["state"] == "open" and "resolved_by" not in topic
    assert topic["notes"] == [
        "[[daily/2026-11-02/deploy]]",
        "[[daily/2026-11-03/healthz]]",
        "[[daily/2026-11-05/outage]]",
    ]
    assert topic["last_seen"] == "2026-11-05"
    assert "[[daily/2026-11-05/outage]]" in ws.read(NOTE)

    entries = ws.reme.history.entries(10)
    runs = [e for e in entries if e.kind == "run"]
    assert [r.verbs for r in runs[:3]] == [
        [f"REOPENED {TOPIC}: {QUESTION}"],
        [f"RESOLVED {TOPIC}: {QUESTION}"],
        [f"NEW {TOPIC}: {QUESTION}"],
    ]
    assert all({TOPICS, NOTE} <= set(r.files) for r in runs[:3])


def test_nothing_changed_asks_nothing(ws: Workspace):
    ws.run(new())
    again = ws.run()  # an empty script: any call would be an error
    assert again.outputs["pending"] == [] and again.outputs["failed"] == []
    assert ws.llm.calls == [] and again.verbs == []


def test_ids_are_code_assigned_and_stable_when_a_note_is_read_again(ws: Workspace):
    ws.run(new())
    ws.write(DEPLOY, ws.read(DEPLOY) + "\nAlso bumped the healthz timeout.\n")
    # The edited note is read again; the model lists the same question as new: no second topic.
    result = ws.run(new())
    assert result.outputs["new"] == [] and [t["id"] for t in ws.topics()] == [TOPIC]
    # Another question in the same note gets another id; the first keeps its own.
    ws.write(DEPLOY, ws.read(DEPLOY) + "\nAsk Mira about the rollback plan.\n")
    result = ws.run(new("Ask Mira about the rollback plan", DEPLOY, kind="question"))
    other = topic_id("Ask Mira about the rollback plan", DEPLOY)
    assert result.outputs["new"] == [other] and [t["id"] for t in ws.topics()] == [TOPIC, other]


BAD_ANSWERS = {
    "garbage": "Sure! Here are the follow-ups: check healthz.",
    "unknown topic id": event("resolved", "t00000000", HEALTHZ),
    "a resolution without a resolving note": {"resolved": [{"topic": TOPIC, "how": "done"}]},
    "a note not in the input": event("resolved", TOPIC, DEPLOY),
    "a new topic citing an unread note": new(QUESTION + " again", "daily/2026-11-09/nope.md"),
    "an id made by the model": {"new": [{"id": "t12345678", "text": "x" * 9, "notes": [HEALTHZ]}]},
}


@pytest.mark.parametrize("answer", list(BAD_ANSWERS.values()), ids=list(BAD_ANSWERS))
def test_a_bad_answer_is_rejected_nothing_written_and_the_notes_wait(ws: Workspace, answer: Any):
    ws.run(new())
    ws.write(HEALTHZ)
    before = ws.tree()
    result = ws.run(answer)
    (failure,) = result.outputs["failed"]
    assert failure["notes"] == [HEALTHZ] and failure["reason"].startswith("model error")
    assert result.outputs["written"] == [] and result.outputs["read"] == []
    assert ws.tree() == before and result.verbs == [] and result.history is None
    # The work is left to retry: the next run reads the same note and can resolve the topic.
    retry = ws.run(event("resolved", TOPIC, HEALTHZ))
    assert retry.outputs["read"] == [HEALTHZ] and retry.outputs["resolved"] == [TOPIC]


@pytest.mark.parametrize("step", [{"output_retries": 1}, {"retries": 1}])
def test_a_rejected_answer_is_asked_again_within_the_retries(tmp_path: Path, step: dict):
    # output_retries: instructor's re-ask inside one call; retries: another call of the batch.
    ws = Workspace(tmp_path, step=step)
    ws.write(DEPLOY)
    try:
        result = ws.run(event("resolved", "t00000000", DEPLOY), new())
        assert result.outputs["new"] == [TOPIC] and result.outputs["failed"] == []
        assert ws.llm.usage.calls == 2
    finally:
        ws.close()


def test_verify_refuses_a_dropped_topic_and_a_resolution_without_its_note():
    before = ProactiveTopics(
        topics=[
            ProactiveTopic(
                id=TOPIC,
                text=QUESTION,
                notes=["[[daily/2026-11-02/deploy]]"],
                first_seen="2026-11-02",
                last_seen="2026-11-02",
            )
        ]
    )
    inputs = {HEALTHZ: "h"}
    with pytest.raises(Rejected, match="would be dropped"):
        verify(before, ProactiveTopics(), inputs, lambda p: True)
    resolved = before.model_copy(deep=True)
    resolved.topics[0].state = "resolved"
    with pytest.raises(Rejected, match="without a resolving note"):
        verify(before, resolved, inputs, lambda p: True)
    resolved.topics[0].resolved_by = "[[daily/2026-11-03/healthz]]"
    with pytest.raises(Rejected, match="is gone"):
        verify(before, resolved, inputs, lambda p: False)
    assert verify(before, resolved, inputs, lambda p: True)
    renamed = before.model_copy(deep=True)
    renamed.topics[0].text = "something else"
    with pytest.raises(Rejected, match="text changed"):
        verify(before, renamed, inputs, lambda p: True)


def test_snoozed_topics_are_raised_when_due(ws: Workspace):
    ws.run(new())
    ws.write(HEALTHZ, "---\nname: Later\n---\n\nLook at the 502s again on the 10th.\n")
    ws.run(event("snoozed", TOPIC, HEALTHZ, until="2026-11-10"))
    assert ws.topics()[0]["state"] == "snoozed" and QUESTION not in ws.read(NOTE)
    due = ws.run(today="2026-11-10")  # nothing new to read: the note is still brought up to date
    assert due.outputs["written"] == [NOTE] and QUESTION in ws.read(NOTE)


def test_revert_restores_both_files_and_the_next_run_reads_the_notes_again(ws: Workspace):
    ws.run(new())
    ws.write(HEALTHZ)
    resolved = ws.run(event("resolved", TOPIC, HEALTHZ))
    assert ws.topics()[0]["state"] == "resolved"
    files = ws.reme.revert(resolved.history)
    assert set(files) >= {TOPICS, NOTE}
    assert ws.topics()[0]["state"] == "open" and QUESTION in ws.read(NOTE)
    # The cursor saved with the restored file is the one used: the resolving note is new again.
    again = ws.run(event("resolved", TOPIC, HEALTHZ))
    assert again.outputs["read"] == [HEALTHZ] and ws.topics()[0]["state"] == "resolved"


def test_a_malformed_topics_file_is_an_error_and_is_not_replaced(ws: Workspace):
    ws.run(new())
    ws.write(TOPICS, "topics: [{id: nope}]\n")
    ws.write(HEALTHZ)
    with pytest.raises(Exception, match=r"daily/_proactive.yaml: topics.0"):
        ws.run(event("resolved", TOPIC, HEALTHZ))
    assert ws.read(TOPICS) == "topics: [{id: nope}]\n"


def test_without_a_model_the_run_says_what_to_configure(ws: Workspace):
    ws.open(llm=False)
    with pytest.raises(ConfigError, match="proactive needs a model"):
        ws.reme.run("proactive", {})
    assert not (ws.root / TOPICS).exists() and not (ws.root / CURSOR).exists()


def test_dry_run_writes_nothing(ws: Workspace):
    before = ws.tree()
    result = ws.run(new(), dry_run=True)
    assert result.outputs["new"] == [TOPIC] and result.outputs["written"] == []
    assert ws.tree() == before


def test_notes_without_follow_ups_are_read_and_change_nothing(ws: Workspace):
    ws.run(new())
    before = ws.tree()
    ws.write(HEALTHZ, "---\nname: Lunch\n---\n\nLunch with the team.\n")
    quiet = ws.run({})  # the model finds nothing to follow up
    assert quiet.outputs["read"] == [HEALTHZ] and quiet.outputs["written"] == []
    after = ws.tree()
    assert after[TOPICS] == before[TOPICS] and after[NOTE] == before[NOTE]
    assert quiet.verbs == [] and ws.run().outputs["pending"] == []  # the cursor moved on


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            "pipelines.proactive.steps=[{name: proactive, settings: {max_raised: 0}}]",
            "max_raised",
        ),
        ("pipelines.proactive.steps=[{name: proactive, settings: {batch: 3}}]", "batch"),
        ("server.schedule.proactive='18:00'", "server.schedule.proactive"),
    ],
)
def test_bad_settings_are_refused_naming_the_key(tmp_path: Path, override: str, message: str):
    from reme_core.server.scheduler import schedule_crons

    ws = Workspace(tmp_path, override)
    with pytest.raises(ConfigError, match=message):
        schedule_crons(ws.open().settings)  # a bad step setting fails at open already


def test_a_note_expired_but_not_yet_archived_is_no_evidence(tmp_path: Path):
    # daily/2026-10-20/'s notes stay current 7 days (its folder's policy, from the note's day).
    ws = Workspace(tmp_path, 'lifecycle.expire={"daily/2026-10-20/": 7d}')
    expired = {
        "daily/2026-11-01/dated.md": "---\nexpires: 2026-11-04\n---\n\n# Dated\n\nCall the bank?\n",
        "daily/2026-11-01/counted.md": "---\nexpires: 3d\n---\n\n# Counted\n\nCall the bank?\n",
        "daily/2026-10-20/policy.md": "# Policy\n\nCall the bank?\n",
    }
    later = "daily/2026-11-01/later.md"
    for rel, text in expired.items():
        ws.write(rel, text)
    ws.write(later, "---\nexpires: 2026-12-01\n---\n\n# Later\n\nCall the bank?\n")
    ws.write(DEPLOY)
    try:
        first = ws.run(new())
        assert first.outputs["read"] == [later, DEPLOY]  # active on 2026-11-06: read
        assert not any(rel in ws.llm.prompts("Answer")[0] for rel in expired)
        assert ws.run().outputs["pending"] == []  # still no evidence on the next run
        # On 2026-12-01 the later note expires too: edited then, it is not read again.
        ws.write(later, "---\nexpires: 2026-12-01\n---\n\n# Later\n\nCall the bank today?\n")
        assert ws.run(today="2026-12-01").outputs["pending"] == []
        assert ws.run(today="2026-11-30").outputs["pending"] == [later]
    finally:
        ws.close()
