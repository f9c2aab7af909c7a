"""A purge reaches what pipelines keep beside the notes: the proactive topics that link the note
(dropped, reopened or unlinked, and the note raising them rendered again, as one history entry),
and a resource note's source file (purged with it, so auto_resource does not note it again)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import KEYWORD_ONLY_ENV
from pipelines.test_auto_resource_images import notes_written, open_workspace, png, write
from pipelines.test_proactive_support import CURSOR, NOTE, TOPICS, Workspace, daily, event, new
from pydantic import ValidationError

from reme_core.api import ReviewApi, topic_id
from reme_core.cli import cli
from reme_core.service.operations import OPERATIONS
from reme_core.workspace.history_entries import PurgeRevertError
from tests.service.test_forget import grep, history_objects

TOKEN = "zebraquill7731"
KEEP = "daily/2026-11-01/planning.md"
GONE = "daily/2026-11-02/budget.md"
ASKED = "Who owns the Q4 budget review"
CHECK = "Check the staging cluster quota"
ONLY = f"Ask Sam whether {TOKEN} covers travel"
T_ASKED, T_CHECK, T_ONLY = topic_id(ASKED, KEEP), topic_id(CHECK, KEEP), topic_id(ONLY, GONE)


def forget(reme: Any, **payload: Any) -> dict[str, Any]:
    return OPERATIONS["forget"].call(reme, payload)


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    workspace = Workspace(tmp_path)
    workspace.write(KEEP, daily("Planning", "Open: who owns the Q4 budget review? Quota check."))
    first = {"new": [new(ASKED, KEEP)["new"][0], new(CHECK, KEEP)["new"][0]]}
    assert workspace.run(first).outputs["new"] == [T_ASKED, T_CHECK]
    workspace.write(GONE, daily("Budget", f"Sam owns the review; {TOKEN} is the travel code."))
    second = {
        **new(ONLY, GONE),
        **event("resolved", T_ASKED, GONE, how=f"Sam owns it ({TOKEN})"),
        **event("mentioned", T_CHECK, GONE),
    }
    run = workspace.run(second)
    assert run.outputs["new"] == [T_ONLY], run.outputs
    assert run.outputs["resolved"] == [T_ASKED]
    yield workspace
    workspace.close()


def test_a_purged_note_leaves_every_proactive_topic(ws: Workspace) -> None:
    reme = ws.reme
    assert reme is not None
    assert TOKEN in ws.read(TOPICS) and TOKEN in ws.read(NOTE)  # the proof can fail
    dry = forget(reme, path=GONE, purge=True, dry_run=True)
    assert set(dry["rewrites"]) == {TOPICS, NOTE} and TOKEN in ws.read(TOPICS)
    entries = len(reme.history.entries(100))

    report = forget(reme, path=GONE, purge=True, confirm=True)

    assert report["remaining"] == [], report
    removed = report["removed"]
    assert removed["rewritten"][TOPICS] == [
        f"{T_ASKED}: reopened (it was resolved by the purged note)",
        f"{T_CHECK}: the purged note unlinked",
        f"{T_ONLY}: dropped (the purged note was its only evidence)",
    ]
    assert NOTE in removed["rewritten"] and removed["rewritten_errors"] == []
    topics = {t["id"]: t for t in ws.topics()}
    assert set(topics) == {T_ASKED, T_CHECK}
    assert topics[T_ASKED]["state"] == "open"
    assert "resolved_by" not in topics[T_ASKED] and "resolution" not in topics[T_ASKED]
    assert topics[T_CHECK]["notes"] == ["[[daily/2026-11-01/planning]]"]
    assert topics[T_CHECK]["last_seen"] == "2026-11-01"
    for text in (ws.read(TOPICS), ws.read(NOTE)):
        assert "daily/2026-11-02/budget" not in text and "Sam owns" not in text
    assert ASKED in ws.read(NOTE) and ONLY not in ws.read(NOTE)  # reopened: raised again
    assert grep(ws.root, TOKEN) == []  # the workspace, .reme/ included
    assert grep(ws.root, "daily/2026-11-02/budget") == []
    assert TOKEN.encode() not in history_objects(ws.root)
    # One history entry of its own, naming the files it rewrote, not the note.
    log = reme.history.entries(100)
    assert len(log) == entries + 1  # the purged note's own entries kept, scrubbed of it
    entry = log[0]
    assert entry.run == removed["rewritten_history"]
    assert set(entry.files) == {TOPICS, NOTE} and "budget" not in entry.message
    # The next run reads nothing again and changes nothing.
    again = ws.open([]).run("proactive", {"today": "2026-11-06"})
    assert again.outputs["pending"] == [] and again.outputs["written"] == []
    assert GONE not in ws.read(CURSOR)


def test_a_topic_resolved_by_a_note_left_stays_resolved(ws: Workspace) -> None:
    reme = ws.reme
    assert reme is not None
    report = forget(reme, path=KEEP, purge=True, confirm=True)
    assert report["remaining"] == [], report
    topics = {t["id"]: t for t in ws.topics()}
    assert set(topics) == {T_ASKED, T_CHECK, T_ONLY}  # ids kept (reme's hashes)
    assert topics[T_ASKED]["state"] == "resolved"
    assert topics[T_ASKED]["resolved_by"] == "[[daily/2026-11-02/budget]]"
    assert topics[T_ASKED]["notes"] == ["[[daily/2026-11-02/budget]]"]
    assert topics[T_ASKED]["first_seen"] == "2026-11-02"
    assert set(report["removed"]["rewritten"][TOPICS]) == {
        f"{T_ASKED}: the purged note unlinked",
        f"{T_CHECK}: the purged note unlinked",
    }
    assert grep(ws.root, "daily/2026-11-01/planning") == []


def test_a_note_no_topic_links_leaves_the_topics_and_the_history_alone(ws: Workspace) -> None:
    reme = ws.reme
    assert reme is not None
    ws.write("daily/2026-11-04/other.md", daily("Other", "Nothing to follow up."))
    reme.index()
    before, entries = ws.read(TOPICS), len(reme.history.entries(100))
    report = forget(reme, path="daily/2026-11-04/other.md", purge=True, confirm=True)
    assert report["removed"]["rewritten"] == {} and report["removed"]["rewritten_history"] is None
    assert ws.read(TOPICS) == before
    assert len(reme.history.entries(100)) <= entries + 1  # at most the snapshot of the copy


def test_a_malformed_topics_file_is_reported_and_the_purge_completes(ws: Workspace) -> None:
    reme = ws.reme
    assert reme is not None
    (ws.root / TOPICS).write_text("topics: [oops\n", encoding="utf-8")
    report = forget(reme, path=GONE, purge=True, confirm=True)
    assert not (ws.root / GONE).exists()
    (error,) = report["removed"]["rewritten_errors"]
    assert error.startswith("proactive: ") and "not valid YAML" in error
    assert ws.read(TOPICS) == "topics: [oops\n"


IMAGE = "resource/inbox/lighthouse.png"


def test_a_purged_resource_note_takes_its_image_and_is_not_written_again(root: Path) -> None:
    with open_workspace(root) as reme:
        write(root, IMAGE, png())
        [done] = reme.run("auto_resource").outputs["notes"]
        note = done["note"]
        dry = forget(reme, path=note, purge=True, dry_run=True)
        assert dry["purged_with"] == {IMAGE: note} and dry["paths"] == [note]
        assert (root / IMAGE).exists() and (root / note).exists()

        report = forget(reme, path=note, purge=True, confirm=True)

        assert report["paths"] == [note] and report["purged_with"] == {IMAGE: note}
        assert report["removed"]["files"] == [note, IMAGE]
        assert report["remaining"] == [], report
        assert not (root / IMAGE).exists() and not (root / note).exists()
        assert grep(root, "lighthouse") == []
        calls = len(reme.llm.calls)
        again = reme.run("auto_resource").outputs
        assert again["notes"] == [] and again["pending"] == [] and again["skipped"] == []
        assert notes_written(root) == [] and len(reme.llm.calls) == calls


def test_an_image_another_note_summarises_stays(root: Path) -> None:
    with open_workspace(root) as reme:
        write(root, IMAGE, png())
        [done] = reme.run("auto_resource").outputs["notes"]
        note = done["note"]
        copy = "notes/lighthouse-copy.md"
        reme.files.write(copy, (root / note).read_text(encoding="utf-8"))
        report = forget(reme, path=note, purge=True, confirm=True)
        assert report["purged_with"] == {} and (root / IMAGE).exists()
        again = reme.run("auto_resource").outputs
        assert again["notes"] == [] and again["unchanged"] == 1  # the copy still summarises it
        assert notes_written(root) == []


def test_the_cli_says_what_goes_with_the_note_and_what_is_rewritten(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in KEYWORD_ONLY_ENV.items():
        monkeypatch.setenv(key, value)
    ws.close()

    def run(*args: str) -> Any:
        done = CliRunner().invoke(cli, [*args, "--workspace", str(ws.root)])
        assert done.exit_code == 0, done.output
        return done.stdout

    dry = run("forget", GONE, "--purge", "--dry-run")
    assert f"would rewrite {TOPICS}:\n  {T_ASKED}: reopened" in dry and TOKEN in ws.read(TOPICS)
    done = run("forget", GONE, "--purge", "--yes")
    assert f"rewritten {TOPICS}:" in done and f"{T_ONLY}: dropped" in done
    assert grep(ws.root, TOKEN) == []


def test_a_kept_source_is_not_noted_again_until_it_changes(root: Path) -> None:
    with open_workspace(root) as reme:
        write(root, IMAGE, png())
        [done] = reme.run("auto_resource").outputs["notes"]
        note = done["note"]
        dry = forget(reme, path=note, purge=True, keep_sources=True, dry_run=True)
        assert dry["purged_with"] == {} and dry["kept_sources"] == {IMAGE: note}

        report = forget(reme, path=note, purge=True, keep_sources=True, confirm=True)

        assert report["removed"]["files"] == [note] and report["kept_sources"] == {IMAGE: note}
        assert ".reme/auto_resource/forgotten.json" in report["removed"]["state"]
        assert report["remaining"] == [], report
        assert (root / IMAGE).exists() and not (root / note).exists()
        calls = len(reme.llm.calls)
        again = reme.run("auto_resource").outputs
        assert again["notes"] == [] and [s["path"] for s in again["skipped"]] == [IMAGE]
        assert notes_written(root) == [] and len(reme.llm.calls) == calls
        write(root, IMAGE, png("NEW SIGN"))  # new bytes: a new file, noted as any other
        [made] = reme.run("auto_resource").outputs["notes"]
        assert made["action"] == "created" and made["resource"] == IMAGE


def test_keep_sources_goes_with_purge_only(root: Path) -> None:
    with open_workspace(root) as reme:
        write(root, IMAGE, png())
        [done] = reme.run("auto_resource").outputs["notes"]
        with pytest.raises(ValidationError, match="keep_sources goes with purge"):
            forget(reme, path=done["note"], keep_sources=True)
        assert (root / done["note"]).exists()


def _traces(root: Path) -> list[str]:
    """What still holds the purged note: files under the workspace (``.reme/`` included), and
    the history's objects."""
    found = grep(root, TOKEN) + grep(root, "daily/2026-11-02/budget")
    if TOKEN.encode() in history_objects(root):
        found.append("history")
    return found


def test_the_purges_own_history_entry_cannot_be_reverted(ws: Workspace) -> None:
    reme = ws.reme
    assert reme is not None
    report = forget(reme, path=GONE, purge=True, confirm=True)
    run = report["removed"]["rewritten_history"]
    assert run is not None and report["remaining"] == []
    before, entries = ws.tree(), len(reme.history.entries(100))
    for op in ("history_show", "revert"):
        payload = {"run": run} | ({"dry_run": True} if op == "revert" else {})
        assert "cannot be undone" in OPERATIONS[op].call(reme, payload)["not_revertible"]
    archived = OPERATIONS["history_show"].call(reme, {"run": reme.history.entries(100)[1].run})
    assert archived["not_revertible"] is None
    for consent in ({}, {"confirm": True}, {"confirm": True, "force": True}):
        with pytest.raises(
            PurgeRevertError, match=r"part of a purge .* cannot be undone"
        ) as refused:
            OPERATIONS["revert"].call(reme, {"run": run, **consent})
        assert "nothing was changed" in str(refused.value)
    assert ws.tree() == before and len(reme.history.entries(100)) == entries
    assert topic_id(ONLY, GONE) not in {t["id"] for t in ws.topics()}
    assert _traces(ws.root) == []
    ws.close()

    done = CliRunner().invoke(cli, ["revert", run, "--yes", "--workspace", str(ws.root)])
    assert done.exit_code != 0 and "cannot be undone" in done.output, done.output
    assert ws.tree() == before and _traces(ws.root) == []


def test_a_pending_proposal_citing_the_purged_note_goes_with_it(ws: Workspace) -> None:
    ws.overrides.append("pipelines.proactive.review=queue")
    ws.write("daily/2026-11-05/later.md", daily("Later", "Sam still has to confirm the code."))
    queued = ws.run(event("mentioned", T_ONLY, "daily/2026-11-05/later.md"))
    (proposal,) = queued.outputs["proposals"]
    assert proposal["status"] == "pending"
    reme = ws.reme
    assert reme is not None
    report = forget(reme, path=GONE, purge=True, confirm=True)
    assert report["removed"]["proposals"] == [proposal["id"]]
    assert report["remaining"] == [], report
    assert ReviewApi(reme).proposals(status="pending") == []
    assert _traces(ws.root) == []


def test_a_proposal_made_before_the_purge_is_refused_as_stale(ws: Workspace) -> None:
    """Every proactive proposal holds the whole topics file, so one made while that file cited
    the note cites it too and goes with the purge; should one come back (a copy of
    ``.reme/proposals/`` restored), approving it is refused as stale and writes nothing."""
    ws.overrides.append("pipelines.proactive.review=queue")
    ws.write("daily/2026-11-05/later.md", daily("Later", "Renew the TLS certificate."))
    queued = ws.run(new("Renew the TLS certificate", "daily/2026-11-05/later.md"))
    (proposal,) = queued.outputs["proposals"]
    reme = ws.reme
    assert reme is not None
    saved = ReviewApi(reme).store.path(proposal["id"])
    kept = saved.read_bytes()
    forget(reme, path=GONE, purge=True, confirm=True)
    assert not saved.exists()
    saved.write_bytes(kept)
    before = ws.tree()
    outcome = ReviewApi(reme).approve([proposal["id"]])
    (refused,) = outcome.refused
    assert outcome.succeeded == [] and refused.status == "stale"
    assert "changed since the proposal" in refused.reason
    assert {k: v for k, v in ws.tree().items() if k != CURSOR} == {
        k: v for k, v in before.items() if k != CURSOR
    }
    assert TOKEN not in ws.read(TOPICS) and TOKEN not in ws.read(NOTE)


def test_an_archived_note_is_no_new_evidence(ws: Workspace) -> None:
    reme = ws.reme
    assert reme is not None
    archived = forget(reme, path=GONE)
    assert archived["paths"] == [GONE] and "status: archived" in ws.read(GONE)
    topics = ws.read(TOPICS)
    again = ws.run()  # an empty script: any question to the model would fail the run
    assert again.outputs["pending"] == [] and ws.llm.calls == []
    assert ws.read(TOPICS) == topics
    # A new archived note is left out too, until it is active again.
    later = "daily/2026-11-05/later.md"
    ws.write(later, "---\nstatus: archived\n---\n\n# Later\n\nRenew the TLS certificate.\n")
    assert ws.run().outputs["pending"] == [] and ws.llm.calls == []
    reverted = ws.open()
    reverted.revert(archived["history"])
    assert "status: archived" not in ws.read(GONE)
    assert ws.run().outputs["pending"] == []  # the bytes it was read with: nothing new
