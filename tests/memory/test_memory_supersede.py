"""A knowledge update keeps the statement it replaces: the old record as ``<id>-v<N>``
(``status: superseded``, ``superseded_by`` the record), left out of listings and retrieval unless
asked, revertible with the update, and never a second record with the current one's id."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from reme_core.errors import NotFoundError, WorkspaceError
from reme_core.memory import MemoryApi, MemoryFilters
from reme_core.runtime import Reme
from reme_core.workspace.history_entries import RevertRefusedError
from tests.memory.support import files_under, open_workspace, ticking
from tests.memory.test_memory_cli import run as cli_run


@pytest.fixture
def reme(tmp_path: Path) -> Iterator[Reme]:
    with open_workspace(tmp_path / "ws") as opened:
        yield opened


@pytest.fixture
def api(reme: Reme) -> MemoryApi:
    return MemoryApi(reme, clock=ticking())


def _snapshot(root: Path) -> dict[str, str]:
    return {p: (root / p).read_text(encoding="utf-8") for p in files_under(root)}


def test_an_update_keeps_the_old_statement_superseded_by_the_record(reme: Reme, api: MemoryApi):
    record = api.add("Lives in Lisbon.", user_name="alice", metadata={"confidence": 0.9}).record
    before = (reme.root / record.path).read_text(encoding="utf-8")
    changed = api.update(record.memory_id, user_name="alice", content="Lives in Porto since 2026.")
    kept = changed.superseded
    assert changed.action == "updated" and kept is not None
    assert kept.memory_id == f"{record.memory_id}-v1" and kept.content == "Lives in Lisbon."
    assert kept.status == "superseded" and kept.superseded_by == record.memory_id
    assert kept.metadata == {"confidence": 0.9} and kept.updated == record.updated
    front = reme.files.stat(kept.path).frontmatter
    assert front["superseded_by"] == f"[[{record.path.removesuffix('.md')}]]"
    # The copy is the note as it was, bar the keys that mark it.
    assert (reme.root / kept.path).read_text(encoding="utf-8").split("---", 2)[2] == before.split(
        "---", 2
    )[2]
    assert changed.record.path == record.path and changed.record.status == "active"
    entry = reme.history.entries(1)[0]
    assert entry.verbs == [f"SUPERSEDE {kept.path}", f"UPDATE {record.path}"]
    # A second update keeps a second version, each naming the current record.
    again = api.update(record.memory_id, user_name="alice", content="Lives in Braga.")
    assert again.superseded is not None and again.superseded.memory_id == f"{record.memory_id}-v2"
    assert again.superseded.content == "Lives in Porto since 2026."
    assert again.superseded.superseded_by == record.memory_id


def test_changes_that_replace_no_statement_keep_no_copy(reme: Reme, api: MemoryApi):
    record = api.add("Uses vim.", user_name="alice").record
    meta = api.update(record.memory_id, user_name="alice", metadata={"since": 2020})
    assert meta.action == "updated" and meta.superseded is None
    spacing = api.update(record.memory_id, user_name="alice", content="uses  Vim.")
    assert spacing.action == "updated" and spacing.superseded is None
    assert files_under(reme.root) == [record.path]


def test_listings_and_retrieval_leave_superseded_records_out_unless_asked(api: MemoryApi):
    record = api.add("Deploys with Fabric scripts.", user_name="alice").record
    new = "Deploys with Ansible playbooks."
    kept = api.update(record.memory_id, user_name="alice", content=new).superseded
    assert kept is not None
    listed = api.list(user_name="alice")
    assert [r.memory_id for r in listed.records] == [record.memory_id] and listed.total == 1
    both = api.list(user_name="alice", filters=MemoryFilters(statuses=["active", "superseded"]))
    assert sorted(r.memory_id for r in both.records) == sorted([record.memory_id, kept.memory_id])
    assert api.retrieve("Fabric scripts", user_name="alice").hits == []
    found = api.retrieve("Fabric scripts", user_name="alice", statuses=["active", "superseded"])
    assert [h.record.memory_id for h in found.hits] == [kept.memory_id]
    assert found.hits[0].record.superseded_by == record.memory_id
    assert api.get(kept.memory_id, user_name="alice").superseded_by == record.memory_id
    with pytest.raises(WorkspaceError, match="unknown status"):
        api.retrieve("Fabric", user_name="alice", statuses=["gone"])  # type: ignore[list-item]
    with pytest.raises(WorkspaceError, match="statuses is empty"):
        api.retrieve("Fabric", user_name="alice", statuses=[])


def test_reverting_the_update_restores_the_statement_and_drops_the_copy(reme: Reme, api: MemoryApi):
    record = api.add("Prefers tabs.", user_name="alice").record
    before = _snapshot(reme.root)
    changed = api.update(record.memory_id, user_name="alice", content="Prefers spaces.")
    assert changed.history is not None and len(files_under(reme.root)) == 2
    after = _snapshot(reme.root)
    # The revert deletes the copy, so it asks for confirmation as every deleting revert does.
    with pytest.raises(RevertRefusedError, match="would delete 1 file"):
        reme.revert(changed.history)
    assert _snapshot(reme.root) == after
    reme.revert(changed.history, confirm=True)
    assert _snapshot(reme.root) == before
    assert api.get(record.memory_id, user_name="alice").content == "Prefers tabs."
    assert api.list(user_name="alice", filters=MemoryFilters(statuses=["superseded"])).total == 0


def test_bad_updates_are_refused_and_change_nothing(reme: Reme, api: MemoryApi):
    record = api.add("Drinks coffee.", user_name="alice").record
    kept = api.update(record.memory_id, user_name="alice", content="Drinks tea.").superseded
    assert kept is not None
    before, entries = _snapshot(reme.root), len(reme.history.entries())
    with pytest.raises(WorkspaceError, match=f"superseded by memory '{record.memory_id}'"):
        api.update(kept.memory_id, user_name="alice", content="Drinks water.")
    with pytest.raises(NotFoundError, match="no memory 'nosuchid'"):
        api.update("nosuchid", user_name="alice", content="Drinks water.")
    with pytest.raises(NotFoundError):  # another scope's record is not found either
        api.update(record.memory_id, user_name="bob", content="Drinks water.")
    with pytest.raises(WorkspaceError, match="memory content is empty"):
        api.update(record.memory_id, user_name="alice", content="  ")
    assert _snapshot(reme.root) == before and len(reme.history.entries()) == entries


def test_a_failed_rewrite_leaves_no_copy(reme: Reme, api: MemoryApi, monkeypatch):
    record = api.add("Runs Linux.", user_name="alice").record
    before = _snapshot(reme.root)

    def refuse(*args, **kwargs):
        raise WorkspaceError("disk full")

    monkeypatch.setattr(api.store, "replace", refuse)
    with pytest.raises(WorkspaceError, match="disk full"):
        api.update(record.memory_id, user_name="alice", content="Runs macOS.")
    assert _snapshot(reme.root) == before


def test_delete_takes_the_superseded_versions_with_it(reme: Reme, api: MemoryApi):
    record = api.add("Works at Acme.", user_name="alice").record
    other = api.add("Has a cat.", user_name="alice").record
    api.update(record.memory_id, user_name="alice", content="Works at Initech.")
    deleted = api.delete(record.memory_id, user_name="alice")
    assert deleted.versions == [f"{record.memory_id}-v1"]
    assert files_under(reme.root) == [other.path]
    assert deleted.history is not None
    reme.revert(deleted.history)
    assert len(files_under(reme.root)) == 3


def test_the_cli_says_what_it_kept_and_shows_superseded_on_request(tmp_path: Path):
    root = tmp_path / "ws"
    open_workspace(root).close()

    def run(*args: str):
        return cli_run(root, *args)

    added = json.loads(run("memory", "add", "Uses Emacs.", "--user", "alice", "--json").stdout)
    memory_id = added["record"]["memory_id"]
    updated = run("memory", "update", memory_id, "--user", "alice", "--content", "Uses Helix.")
    assert updated.exit_code == 0
    assert f"kept the old statement as {memory_id}-v1 (superseded)" in updated.stdout
    listing = run("memory", "list", "--user", "alice")
    assert listing.stdout.split()[0] == memory_id and "-v1" not in listing.stdout
    with_old = run("memory", "list", "--user", "alice", "--status", "superseded")
    assert (
        f"{memory_id}-v1" in with_old.stdout and f"(superseded by {memory_id})" in with_old.stdout
    )
    found = run(
        "memory", "retrieve", "Emacs", "--user", "alice", "--status", "superseded", "--json"
    )
    hits = json.loads(found.stdout)["hits"]
    assert [h["record"]["superseded_by"] for h in hits] == [memory_id]
    refused = run("memory", "update", f"{memory_id}-v1", "--user", "alice", "--content", "x")
    assert refused.exit_code != 0 and "update that one instead" in refused.output


def test_a_summary_that_refines_a_record_keeps_what_it_replaced(tmp_path: Path):
    from tests.memory.support import scripted
    from tests.memory.test_memory_summarize import CHAT, memory

    root = tmp_path / "ws"
    with open_workspace(root) as setup:
        setup_api = MemoryApi(setup, clock=ticking())
        record = setup_api.add("Uses 4 spaces.", user_name="alice").record
        old = setup_api.update(record.memory_id, user_name="alice", content="Uses 3 spaces.")
        assert old.superseded is not None
    answers = [
        {"memories": [memory("Uses 2 spaces in YAML.", refines=record.memory_id)]},
        # A refinement of a superseded statement is no update of it: added as a new record.
        {"memories": [memory("Uses tabs.", refines=old.superseded.memory_id)]},
    ]
    with open_workspace(root, scripted(tmp_path, answers, llm="recording")) as reme:
        api = MemoryApi(reme, clock=ticking())
        done = api.summarize(CHAT, user_name="alice")
        assert [r.content for r in done.updated] == ["Uses 2 spaces in YAML."]
        assert [(r.memory_id, r.content) for r in done.superseded] == [
            (f"{record.memory_id}-v2", "Uses 3 spaces.")
        ]
        assert "Uses 4 spaces." not in reme.llm.prompts()[0]  # only active records are offered
        second = api.summarize(CHAT, user_name="alice")
        assert "superseded" in second.warnings[0] and [r.content for r in second.added] == [
            "Uses tabs."
        ]
        kept = api.get(old.superseded.memory_id, user_name="alice")
        assert kept.content == "Uses 4 spaces." and kept.status == "superseded"


def test_an_approved_refinement_keeps_the_statement_it_replaced(tmp_path: Path):
    from tests.memory.support import scripted
    from tests.memory.test_memory_summarize import CHAT, memory

    root = tmp_path / "ws"
    refine = {"memories": [memory("Uses 2 spaces in YAML.", refines="@4 spaces")]}
    queue = "memory.review=queue"
    with open_workspace(root, scripted(tmp_path, [refine], "reads_ids"), queue) as reme:
        api = MemoryApi(reme, clock=ticking())
        record = api.add("Uses 4 spaces.", user_name="alice").record
        (proposal,) = api.summarize(CHAT, user_name="alice").proposals
        assert files_under(root) == [record.path]  # nothing written before approval
        (outcome,) = reme.review.approve([proposal]).succeeded
        assert outcome.reason is None
        assert api.get(record.memory_id, user_name="alice").content == "Uses 2 spaces in YAML."
        kept = api.get(f"{record.memory_id}-v1", user_name="alice")
        assert kept.content == "Uses 4 spaces." and kept.superseded_by == record.memory_id
        entry = reme.history.entries(1)[0]
        assert entry.message.startswith("reme memory review: approve")
        reme.revert(entry.run, confirm=True)
        assert files_under(root) == [record.path]
        assert api.get(record.memory_id, user_name="alice").content == "Uses 4 spaces."
