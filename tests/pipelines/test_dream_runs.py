"""dream across runs: retries, failures that stay retryable, the checkpoint, catch-up, max_units,
dry runs, overlapping units, and a missing model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pipelines.test_dream_support import (
    DEPLOY,
    DEPLOY_NODE,
    NOTES,
    POSTGRES,
    PREFS,
    Workspace,
    daily,
    decision,
    extraction,
    unit,
)
from reme_core.errors import ConfigError
from reme_core.pipelines.engine import PipelineError

MIRA = "digest/personal/mira.md"
CREATE_MIRA = decision("CREATE", MIRA, content="# Mira\n\nShort answers, command first.\n")
CORROBORATE_DEPLOY = decision("CORROBORATE", "digest/procedure/deploy.md")
DROPS_LINK = decision(
    "REFINE",
    "digest/procedure/deploy.md",
    content=DEPLOY_NODE.replace("; the layout is in [[digest/wiki/architecture]]", ""),
)


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    workspace = Workspace(tmp_path, integrate={"max_decision_retries": 2})
    yield workspace
    workspace.close()


def test_a_rejected_decision_is_retried_with_the_reason(ws: Workspace):
    result = ws.run([extraction(DEPLOY), DROPS_LINK, CORROBORATE_DEPLOY])
    (outcome,) = result.outputs["decisions"]
    assert outcome["result"] == "applied" and outcome["verb"] == "CORROBORATE"
    assert outcome["attempts"] == 2 and outcome["reason"] is None
    assert "drops links [[digest/wiki/architecture]]" in outcome["rejections"][0]
    first, retry = ws.llm.prompts("Decision")
    assert "drops links [[digest/wiki/architecture]]" in retry and "rejected" in retry
    assert "digest/procedure/deploy.md" in first  # the candidate's text was shown
    assert "[[digest/wiki/architecture]]" in ws.read("digest/procedure/deploy.md")
    assert ws.checkpoint()["queue"] == []


def test_spent_retries_fail_the_unit_which_the_next_run_retries(ws: Workspace):
    before = ws.tree()
    result = ws.run([extraction(DEPLOY, PREFS), DROPS_LINK, DROPS_LINK, DROPS_LINK, CREATE_MIRA])
    failed, created = result.outputs["decisions"]
    assert failed["result"] == "failed" and failed["attempts"] == 3
    assert len(failed["rejections"]) == 3 and "drops links" in failed["reason"]
    assert created["result"] == "applied"  # one failure does not stop the run
    assert ws.read("digest/procedure/deploy.md") == before["digest/procedure/deploy.md"].decode()
    assert result.outputs["failed"] == [
        {"unit": DEPLOY["name"], "sources": DEPLOY["sources"], "reason": failed["reason"]}
    ]
    checkpoint = ws.checkpoint()
    assert set(checkpoint["notes"]) == set(NOTES)
    (queued,) = checkpoint["queue"]
    assert queued["status"] == "failed" and queued["attempts"] == 1
    assert queued["unit"]["name"] == DEPLOY["name"]

    # Next run: the queued unit comes back without asking the model to extract anything.
    again = ws.run([CORROBORATE_DEPLOY])
    (outcome,) = again.outputs["decisions"]
    assert outcome["unit"] == failed["unit"] and outcome["result"] == "applied"
    assert ws.llm.prompts("Extraction") == []
    assert ws.checkpoint()["queue"] == []
    assert "- [[daily/2026-11-02/deploy]]" in ws.read("digest/procedure/deploy.md")


GARBAGE = [
    {"error": "timed out after 60 s"},
    '{"verb": "CREATE", "target": "digest/personal/mi',  # truncated JSON
    {"error": "HTTP 502 Bad Gateway"},
]


def test_model_errors_are_retried_then_fail_cleanly(ws: Workspace):
    before = ws.tree()
    result = ws.run([extraction(PREFS), *GARBAGE])
    (outcome,) = result.outputs["decisions"]
    assert outcome["result"] == "failed" and outcome["attempts"] == 3
    assert outcome["reason"].startswith("model error: ") and "HTTP 502" in outcome["reason"]
    assert ws.tree() == before and result.verbs == []
    (queued,) = ws.checkpoint()["queue"]
    assert queued["unit"]["sources"] == PREFS["sources"]
    # Nothing lost: the next run integrates it.
    again = ws.run([CREATE_MIRA])
    assert again.outputs["decisions"][0]["result"] == "applied"
    assert ws.checkpoint()["queue"] == []


def test_garbage_then_a_good_answer_succeeds(ws: Workspace):
    result = ws.run([extraction(PREFS), "not json at all", {"error": "timeout"}, CREATE_MIRA])
    (outcome,) = result.outputs["decisions"]
    assert outcome["result"] == "applied" and outcome["attempts"] == 3


def test_a_failed_extraction_leaves_its_notes_pending(ws: Workspace):
    before = ws.tree()
    result = ws.run([{"error": "HTTP 500"}])
    assert result.outputs["units"] == [] and result.outputs["decisions"] == []
    (failure,) = result.outputs["extract_failures"]
    assert set(failure["paths"]) == set(NOTES) and "HTTP 500" in failure["reason"]
    assert ws.tree() == before and ws.checkpoint()["notes"] == {}
    again = ws.run([extraction(PREFS), CREATE_MIRA])
    assert again.outputs["decisions"][0]["result"] == "applied"
    assert set(ws.checkpoint()["notes"]) == set(NOTES)


def test_extraction_output_citing_an_unknown_note_is_retried(tmp_path: Path):
    ws = Workspace(tmp_path, extract={"output_retries": 1})
    bad = unit("x", "wiki", "y", "daily/2026-11-09/made-up.md")
    try:
        result = ws.run([extraction(bad), extraction(PREFS), CREATE_MIRA])
    finally:
        ws.close()
    assert [d["name"] for d in result.outputs["decisions"]] == [PREFS["name"]]


def test_catch_up_then_only_changed_notes(ws: Workspace):
    result = ws.run(
        [
            extraction(DEPLOY, PREFS, POSTGRES),
            CORROBORATE_DEPLOY,
            CREATE_MIRA,
            decision("CORROBORATE", "digest/wiki/postgres.md"),
        ]
    )
    # Every unprocessed day in one catch-up run, oldest first.
    (prompt,) = ws.llm.prompts("Extraction")
    positions = [prompt.index(f'<note path="{path}">') for path in sorted(NOTES)]
    assert positions == sorted(positions)
    assert [d["result"] for d in result.outputs["decisions"]] == ["applied"] * 3
    assert result.outputs["changed"] == [
        "digest/personal/mira.md",
        "digest/procedure/deploy.md",
        "digest/wiki/postgres.md",
    ]
    marks = ws.checkpoint()["notes"]
    assert set(marks) == set(NOTES)

    # Nothing changed: no model call at all.
    idle = ws.run([])
    assert idle.usage.calls == 0 and idle.outputs["pending"] == []

    # A note rewritten with the same bytes is not a change; an edited one is, alone.
    ws.write("daily/2026-11-02/deploy.md", NOTES["daily/2026-11-02/deploy.md"])
    ws.write("daily/2026-11-03/prefs.md", NOTES["daily/2026-11-03/prefs.md"] + "Also: no emoji.\n")
    again = ws.run(
        [
            extraction(),
        ]
    )
    (prompt,) = ws.llm.prompts("Extraction")
    assert again.outputs["pending"] == ["daily/2026-11-03/prefs.md"]
    assert "daily/2026-11-03/prefs.md" in prompt and "daily/2026-11-02/deploy.md" not in prompt
    assert (
        ws.checkpoint()["notes"]["daily/2026-11-03/prefs.md"]["hash"]
        != (marks["daily/2026-11-03/prefs.md"]["hash"])
    )


def test_date_limits_the_run_to_one_day(ws: Workspace):
    result = ws.run([extraction(PREFS), CREATE_MIRA], date="2026-11-03")
    assert result.outputs["pending"] == ["daily/2026-11-03/prefs.md"]
    assert list(ws.checkpoint()["notes"]) == ["daily/2026-11-03/prefs.md"]
    rest = ws.run([extraction()])
    assert rest.outputs["pending"] == ["daily/2026-11-02/deploy.md", "daily/2026-11-04/postgres.md"]


def test_a_bad_date_is_refused_before_anything_happens(ws: Workspace):
    before = ws.tree()
    with pytest.raises(PipelineError, match="date must be YYYY-MM-DD"):
        ws.run([extraction(PREFS)], date="last tuesday")
    assert ws.tree() == before and not (ws.root / ".reme/dream/checkpoint.json").exists()


def test_max_units_defers_the_rest_to_the_next_run(tmp_path: Path):
    ws = Workspace(tmp_path, extract={"max_units": 2})
    try:
        result = ws.run([extraction(DEPLOY, PREFS, POSTGRES), CORROBORATE_DEPLOY, CREATE_MIRA])
        assert len(result.outputs["decisions"]) == 2
        assert [u["name"] for u in result.outputs["deferred"]] == [POSTGRES["name"]]
        checkpoint = ws.checkpoint()
        assert set(checkpoint["notes"]) == set(NOTES)  # extracted; the unit waits in the queue
        assert [(q["status"], q["unit"]["name"]) for q in checkpoint["queue"]] == [
            ("pending", POSTGRES["name"])
        ]
        later = ws.run([decision("CORROBORATE", "digest/wiki/postgres.md")])
        assert [d["name"] for d in later.outputs["decisions"]] == [POSTGRES["name"]]
        assert ws.llm.prompts("Extraction") == [] and ws.checkpoint()["queue"] == []
    finally:
        ws.close()


def test_notes_are_batched_under_the_token_budget(tmp_path: Path):
    long_body = "\n".join(f"Line {i}: the deploy needed step {i} done by hand." for i in range(400))
    notes = {
        **{f"daily/2026-11-0{d}/s.md": daily(f"Session {d}", "short " * 200) for d in range(1, 4)},
        "daily/2026-11-05/long.md": daily("Long session", long_body),
    }
    ws = Workspace(tmp_path, notes=notes, extract={"batch_tokens": 1000})
    try:
        result = ws.run([extraction()] * 20)
        prompts = ws.llm.prompts("Extraction")
    finally:
        ws.close()
    assert len(prompts) > 4
    assert all(p.count("<note ") <= 3 for p in prompts)
    assert sum('part="' in p for p in prompts) >= 4  # the long note went in parts
    assert set(result.outputs["extracted"]) == set(notes)  # every part of every note was read


def test_a_queued_unit_whose_note_changed_is_extracted_again(ws: Workspace):
    ws.run([extraction(PREFS), {"error": "down"}, {"error": "down"}, {"error": "down"}])
    assert len(ws.checkpoint()["queue"]) == 1
    ws.write("daily/2026-11-03/prefs.md", NOTES["daily/2026-11-03/prefs.md"] + "And tables.\n")
    changed = unit("Mira likes tables", "personal", "Mira likes tables.", *PREFS["sources"])
    result = ws.run([extraction(changed), CREATE_MIRA])
    assert [d["name"] for d in result.outputs["decisions"]] == ["Mira likes tables"]
    assert len(result.outputs["stale"]) == 1 and ws.checkpoint()["queue"] == []


def test_dry_run_decides_and_verifies_but_writes_nothing(ws: Workspace):
    before = ws.tree()
    result = ws.run(
        [extraction(PREFS, DEPLOY), CREATE_MIRA, DROPS_LINK, DROPS_LINK, DROPS_LINK], dry_run=True
    )
    mira, deploy = result.outputs["decisions"]
    assert mira["result"] == "dry-run" and mira["target"] == MIRA
    assert deploy["result"] == "failed"  # verification still runs
    assert ws.tree() == before and result.history is None and result.verbs == []
    assert result.outputs["changed"] == [] and result.outputs["checkpoint"]["saved"] is False
    assert not (ws.root / ".reme/dream/checkpoint.json").exists()


def test_overlapping_units_end_in_one_node(ws: Workspace):
    other = "daily/2026-11-05/deploy-again.md"
    ws.write(other, daily("Deploy again", "orjson was missing from the lock file again."))
    first = unit(
        "orjson missing from requirements.lock",
        "wiki",
        "orjson crash-looped the deploy because requirements.lock was stale.",
        "daily/2026-11-02/deploy.md",
    )
    second = unit(
        "orjson missing from the lock again",
        "wiki",
        "orjson was missing from requirements.lock again on 2026-11-05.",
        other,
    )
    node = "digest/wiki/orjson-lock.md"
    result = ws.run(
        [
            extraction(first, second),
            decision("CREATE", node, content="# orjson and the lock\n\norjson must be locked.\n"),
            decision("CORROBORATE", node),
        ]
    )
    one, two = result.outputs["decisions"]
    assert one["result"] == two["result"] == "applied"
    assert node not in one["candidates"] and node in two["candidates"]  # indexed in between
    assert "orjson must be locked." in ws.llm.prompts("Decision")[1]
    text = ws.read(node)
    assert text.endswith("- [[daily/2026-11-02/deploy]]\n- [[daily/2026-11-05/deploy-again]]\n")
    assert sorted(p.name for p in (ws.root / "digest/wiki").iterdir()) == [
        "architecture.md",
        "orjson-lock.md",
        "postgres.md",
    ]
    assert result.verbs == [f"CREATE {node}", f"CORROBORATE {node}"]


def test_a_hand_edit_racing_the_run_is_never_overwritten(ws: Workspace):
    ws.open([extraction(DEPLOY), CORROBORATE_DEPLOY])
    hand = DEPLOY_NODE + "\nEdited by hand.\n"

    def edit_by_hand(kind: str) -> None:
        if kind == "Decision":
            ws.write("digest/procedure/deploy.md", hand)

    ws.llm.on_call = edit_by_hand
    result = ws.reme.run("dream", {})
    (outcome,) = result.outputs["decisions"]
    assert outcome["result"] == "failed" and "changed since it was read" in outcome["reason"]
    assert ws.read("digest/procedure/deploy.md") == hand
    assert ws.checkpoint()["queue"][0]["status"] == "failed"


def test_without_a_model_dream_says_it_needs_one(ws: Workspace):
    ws.open([], llm=None)
    with pytest.raises(ConfigError, match=r"dream needs a model: set components\.llm"):
        ws.reme.run("dream", {})
    assert not (ws.root / ".reme/dream/checkpoint.json").exists()


def test_units_no_step_integrated_wait_in_the_queue(tmp_path: Path):
    ws = Workspace(tmp_path)
    no_integrate = "pipelines.dream.steps=[{name: dream_extract}, {name: dream_finish}]"
    try:
        ws.open([extraction(PREFS)], pipeline=no_integrate)
        ws.reme.run("dream", {})
        assert [q["status"] for q in ws.checkpoint()["queue"]] == ["pending"]
        result = ws.run([CREATE_MIRA])
        assert result.outputs["decisions"][0]["result"] == "applied"
        assert ws.checkpoint()["queue"] == []
    finally:
        ws.close()


def test_an_extraction_error_is_retried_and_unreadable_notes_are_reported(tmp_path: Path):
    ws = Workspace(tmp_path, extract={"extract_retries": 1})
    (ws.root / "daily/2026-11-06").mkdir()
    (ws.root / "daily/2026-11-06/binary.md").write_bytes(b"\xff\xfe not utf-8")
    try:
        result = ws.run([{"error": "HTTP 503"}, extraction(PREFS), CREATE_MIRA])
        assert result.outputs["extract_failures"] == []
        assert result.outputs["decisions"][0]["result"] == "applied"
        assert "UTF-8" in result.outputs["problems"]["daily/2026-11-06/binary.md"]
        assert "daily/2026-11-06/binary.md" not in ws.checkpoint()["notes"]
    finally:
        ws.close()
