"""Every write, edit, move and delete through reme lands in the history as it happens, so a
deleted note's text can be restored (issue 20, defect 6); what the history stores is redacted as
text is on ingest, and a revert never writes a path the history may not hold or through a link
(defect 1)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import KEYWORD_ONLY_ENV

from reme_core.runtime import Reme
from reme_core.service.operations import OPERATIONS
from reme_core.workspace import init_workspace
from reme_core.workspace.history import BASELINE, HistoryError

NOTE = "digest/wiki/larkspur.md"
TEXT = "# Larkspur\n\nThe larkspur rollout waits for the audit.\n"
SECRET = "wJalrXUtnFEMI-history-canary-K7MDENG"


@pytest.fixture
def reme(tmp_path: Path) -> Iterator[Reme]:
    root = tmp_path / "ws"
    init_workspace(root)
    (root / "digest" / "wiki" / "before.md").write_text("# There before reme\n")
    with Reme.open(root, env=KEYWORD_ONLY_ENV) as opened:
        yield opened


def call(reme: Reme, name: str, **payload: object) -> dict:
    return OPERATIONS[name].call(reme, payload)


def test_a_deleted_notes_text_is_restored_by_reverting_its_delete(reme: Reme) -> None:
    call(reme, "write", path=NOTE, content=TEXT)
    call(reme, "edit", path=NOTE, old="audit", new="security audit")
    call(reme, "delete", path=NOTE)
    entries = call(reme, "history")["entries"]
    assert [e["message"] for e in entries] == [
        f"reme: delete {NOTE}",
        f"reme: edit {NOTE}",
        f"reme: write {NOTE}",
        BASELINE,  # the workspace before the first change, not "changes made outside reme"
    ]
    assert entries[-1]["kind"] == "baseline" and entries[-1]["files"] == ["digest/wiki/before.md"]
    assert {e["kind"] for e in entries[:-1]} == {"writes"}
    shown = call(reme, "history_show", run=entries[0]["run"])
    assert shown["plan"]["restored"] == [NOTE] and "-The larkspur rollout" in shown["diff"]
    assert not (reme.root / NOTE).exists()

    done = call(reme, "revert", run=entries[0]["run"])
    assert done["files"] == [NOTE]
    assert (reme.root / NOTE).read_text() == TEXT.replace("audit", "security audit")
    assert [h.path for h in reme.search("larkspur").hits] == [NOTE]


def test_an_outside_edit_is_kept_before_reme_deletes_the_note(reme: Reme) -> None:
    call(reme, "write", path=NOTE, content=TEXT)
    edited = TEXT + "\nAdded in an editor, never through reme.\n"
    (reme.root / NOTE).write_text(edited)
    call(reme, "delete", path=NOTE)
    entries = call(reme, "history")["entries"]
    assert entries[0]["message"] == f"reme: delete {NOTE}"
    assert entries[1]["kind"] == "snapshot" and entries[1]["files"] == [NOTE]
    call(reme, "revert", run=entries[0]["run"])
    assert (reme.root / NOTE).read_text() == edited  # what was deleted, not reme's last write
    # An unchanged note adds no snapshot before its delete.
    call(reme, "delete", path=NOTE)
    assert call(reme, "history")["entries"][0]["message"] == f"reme: delete {NOTE}"
    assert call(reme, "history")["entries"][1]["message"].startswith('Revert "')


def test_a_note_made_outside_reme_is_kept_before_its_first_move(reme: Reme) -> None:
    (reme.root / "digest" / "wiki" / "outside.md").write_text("# Outside\n")
    call(reme, "move", src="digest/wiki/outside.md", dst="digest/wiki/moved.md")
    entries = call(reme, "history")["entries"]
    assert "digest/wiki/outside.md" in entries[-1]["files"]  # the baseline holds it


def test_a_move_is_one_entry_naming_both_paths(reme: Reme) -> None:
    call(reme, "write", path=NOTE, content=TEXT)
    call(reme, "move", src=NOTE, dst="digest/wiki/moved.md")
    latest = reme.history.entries(1)[0]
    assert latest.message == f"reme: move {NOTE} -> digest/wiki/moved.md"
    assert sorted(latest.files) == sorted(["digest/wiki/moved.md", NOTE])


def test_a_run_keeps_its_writes_in_its_own_entry(reme: Reme) -> None:
    call(reme, "write", path=NOTE, content=TEXT)
    with reme.history.batch():  # as a pipeline run, a memory change or an approval does
        reme.files.write("digest/wiki/by-a-run.md", "# By a run\n")
        assert reme.history.entries(1)[0].message == f"reme: write {NOTE}"
        run = reme.history.record("reme run demo")
    assert run is not None and reme.history.entries(1)[0].files == ["digest/wiki/by-a-run.md"]


def test_a_secret_in_a_note_is_committed_redacted(reme: Reme) -> None:
    content = f"# Keys\n\nAWS_SECRET_ACCESS_KEY={SECRET}\n"
    call(reme, "write", path="digest/wiki/keys.md", content=content)
    (reme.root / "digest" / "wiki" / "hand.md").write_text(f"password: {SECRET}\n")
    reme.history.snapshot()
    for entry in call(reme, "history")["entries"]:
        shown = call(reme, "history_show", run=entry["run"])
        assert SECRET not in shown["diff"]
    shown = call(reme, "history_show", run=reme.history.entries(2)[1].run)
    assert "+AWS_SECRET_ACCESS_KEY=[REDACTED:secret]" in shown["diff"]
    objects = _all_objects(reme)
    assert SECRET not in objects and "[REDACTED:secret]" in objects
    # The note itself keeps its text; only the history holds the redacted copy.
    assert SECRET in (reme.root / "digest" / "wiki" / "keys.md").read_text()
    assert reme.history.snapshot() == []  # the redacted copy is not a change each time


def test_a_revert_does_not_write_through_a_hard_link(reme: Reme) -> None:
    call(reme, "write", path=NOTE, content=TEXT)
    call(reme, "edit", path=NOTE, old="audit", new="review")
    edit = reme.history.entries(1)[0].run
    outside = reme.root.parent / "outside.md"
    outside.write_text("# Outside\n")
    (reme.root / NOTE).unlink()
    os.link(outside, reme.root / NOTE)  # the note is now a second name of a file elsewhere
    reme.history.snapshot()
    with pytest.raises(HistoryError):
        reme.revert(edit)
    assert outside.read_text() == "# Outside\n"


def _all_objects(reme: Reme) -> str:
    import subprocess

    done = subprocess.run(
        ["git", f"--git-dir={reme.history.git_dir}", "cat-file", "--batch-all-objects", "--batch"],
        capture_output=True,
        check=True,
    )
    return done.stdout.decode("utf-8", "replace")
