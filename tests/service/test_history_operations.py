"""The operations the studio added to every surface: links, history, history_show, revert, and
write's create_only."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import KEYWORD_ONLY_ENV, copy_example
from pydantic import ValidationError

from reme_core.errors import ConflictError, NotFoundError, PathOutsideWorkspaceError
from reme_core.runtime import Reme
from reme_core.service.operations import OPERATIONS
from reme_core.workspace.history import (
    HistoryError,
    RevertConfirmationError,
    SnapshotRevertError,
)

NOTE = "digest/wiki/larkspur-architecture.md"
MADE = "digest/wiki/made-by-a-run.md"


def call(reme: Reme, name: str, **payload: object) -> object:
    return OPERATIONS[name].call(reme, payload)


@pytest.fixture
def reme(tmp_path: Path) -> Iterator[Reme]:
    copy_example(tmp_path / "ws")
    opened = Reme.open(tmp_path / "ws", env=KEYWORD_ONLY_ENV)
    opened.index()
    opened.history.record("reme: snapshot of changes made outside reme")
    with opened.history.batch():  # as a run writes: its own commit holds the write
        opened.files.write(MADE, "# Made by a run\n\nSee [[larkspur-architecture]].\n")
        opened.history.record(f"reme run demo\n\nCREATE {MADE}")
    yield opened
    opened.close()


def test_links_are_both_ways_and_confined(reme: Reme) -> None:
    found = call(reme, "links", path=NOTE)
    assert found["path"] == NOTE
    assert MADE in {link["source"] for link in found["inbound"]}
    assert {"resolved"} <= {link["state"] for link in found["outbound"]}
    with pytest.raises(NotFoundError):
        call(reme, "links", path="digest/wiki/none.md")
    with pytest.raises(PathOutsideWorkspaceError):
        call(reme, "links", path="../outside.md")


def test_history_lists_entries_newest_first_and_one_files_own(reme: Reme) -> None:
    entries = call(reme, "history")["entries"]
    assert [e["kind"] for e in entries] == ["run", "snapshot"]
    assert entries[0]["verbs"] == [f"CREATE {MADE}"]
    own = call(reme, "history", path=MADE)
    assert own["path"] == MADE and [e["files"] for e in own["entries"]] == [[MADE]]
    assert len(call(reme, "history", path=NOTE)["entries"]) == 1
    assert call(reme, "history", limit=1)["entries"][0]["run"] == entries[0]["run"]
    for outside in (".reme/token", "../x.md", ".git/config"):
        with pytest.raises(PathOutsideWorkspaceError):
            call(reme, "history", path=outside)


def test_history_show_gives_the_diff_and_the_revert_plan(reme: Reme) -> None:
    run = call(reme, "history")["entries"][0]["run"]
    shown = call(reme, "history_show", run=run)
    assert "+# Made by a run" in shown["diff"] and not shown["truncated"]
    assert shown["plan"]["deleted"] == [MADE] and shown["plan"]["kind"] == "run"
    with pytest.raises(HistoryError):
        call(reme, "history_show", run="abcdef0")
    for hostile in ("--output=/tmp/x", "HEAD", "a" * 41, "abc"):
        with pytest.raises(ValidationError):
            call(reme, "history_show", run=hostile)


def test_revert_previews_then_needs_confirmation_to_delete(reme: Reme) -> None:
    entries = call(reme, "history")["entries"]
    run, snapshot = entries[0]["run"], entries[1]["run"]
    plan = call(reme, "revert", run=run, dry_run=True)["plan"]
    assert plan["deleted"] == [MADE] and (reme.root / MADE).exists()
    with pytest.raises(RevertConfirmationError) as refused:
        call(reme, "revert", run=run)
    assert refused.value.files == [MADE] and (reme.root / MADE).exists()
    with pytest.raises(SnapshotRevertError):
        call(reme, "revert", run=snapshot, confirm=True)
    done = call(reme, "revert", run=run, confirm=True)
    assert done["files"] == [MADE] and not (reme.root / MADE).exists()
    assert call(reme, "history")["entries"][0]["kind"] == "revert"
    assert all(hit.path != MADE for hit in reme.search("Made by a run").hits)  # reindexed


def test_write_create_only_never_replaces(reme: Reme) -> None:
    before = (reme.root / NOTE).read_text()
    with pytest.raises(ConflictError):
        call(reme, "write", path=NOTE, content="# x\n", create_only=True)
    assert (reme.root / NOTE).read_text() == before
    made = call(reme, "write", path="digest/wiki/fresh.md", content="# fresh\n", create_only=True)
    assert made["created"]


def test_a_read_profile_may_read_history_but_not_revert() -> None:
    assert OPERATIONS["history"].profile == "read" and OPERATIONS["history_show"].read_only
    assert OPERATIONS["revert"].profile == "admin" and OPERATIONS["revert"].destructive
