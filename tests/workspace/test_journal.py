from __future__ import annotations

from pathlib import Path

from reme_core.workspace import Journal


def test_append_and_read_newest_last(tmp_path: Path) -> None:
    journal = Journal(tmp_path / ".reme")
    journal.record("write", "a.md", after_hash="h1")
    journal.record("move", "a.md", to="b.md", before_hash="h1", after_hash="h1", actor="dream")
    journal.record("delete", "b.md", before_hash="h1")
    entries = journal.entries()
    assert [e.op for e in entries] == ["write", "move", "delete"]
    assert entries[1].to == "b.md" and entries[1].actor == "dream"
    assert [e.op for e in journal.entries(limit=2)] == ["move", "delete"]
    assert journal.entries(limit=0) == []
    assert len((tmp_path / ".reme" / "journal.jsonl").read_text().splitlines()) == 3


def test_torn_line_is_skipped_and_closed(tmp_path: Path) -> None:
    journal = Journal(tmp_path)
    journal.record("write", "a.md")
    with open(journal.path, "a") as fh:
        fh.write('{"ts": "x", "op": "wri')  # a crash mid-append
    journal.record("edit", "a.md")
    assert [e.op for e in journal.entries()] == ["write", "edit"]


def test_missing_journal_is_empty(tmp_path: Path) -> None:
    assert Journal(tmp_path / "nope").entries() == []
