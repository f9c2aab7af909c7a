"""MemoryApi: records as notes, scope isolation on every read, history of every change."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from reme_core.errors import ConflictError, NotFoundError, WorkspaceError
from reme_core.memory import MemoryApi, MemoryFilters
from reme_core.runtime import Reme
from reme_core.workspace import history_repo as history_module
from reme_core.workspace.frontmatter import dump_note
from tests.memory.support import files_under, open_workspace, ticking


@pytest.fixture
def reme(tmp_path: Path) -> Iterator[Reme]:
    with open_workspace(tmp_path / "ws") as opened:
        yield opened


@pytest.fixture
def api(reme: Reme) -> MemoryApi:
    return MemoryApi(reme, clock=ticking())


def test_a_record_is_a_searchable_note_with_its_frontmatter(reme: Reme, api: MemoryApi):
    added = api.add(
        "Prefers pytest with plain asserts.",
        user_name="alice",
        when_to_use="Writing tests for Alice",
        sources=["sessions/s1.jsonl"],
    )
    record = added.record
    assert added.action == "added" and record.path == f"digest/personal/alice/{record.memory_id}.md"
    front = reme.files.stat(record.path).frontmatter
    assert front is not None
    assert {k: front[k] for k in ("memory_id", "memory_type", "user_name", "when_to_use")} == {
        "memory_id": record.memory_id,
        "memory_type": "personal",
        "user_name": "alice",
        "when_to_use": "Writing tests for Alice",
    }
    assert front["created"] == front["updated"] == "2026-11-02T09:00:00+00:00"
    assert front["sources"] == ["sessions/s1.jsonl"]
    # Indexed before add returned (read-your-writes), so plain search sees it too.
    assert reme.search("pytest asserts").hits[0].path == record.path
    assert api.get(record.memory_id, user_name="alice") == record


def test_update_merges_metadata_keeps_other_keys_and_records_history(reme: Reme, api: MemoryApi):
    record = api.add("Uses vim.", user_name="alice", metadata={"confidence": 0.5}).record
    reme.files.update_frontmatter(record.path, {"tags": ["editor"]})  # a person's own key
    changed = api.update(
        record.memory_id,
        user_name="alice",
        content="Uses Neovim with pyright.",
        metadata={"confidence": None, "since": 2024},
    )
    assert changed.action == "updated" and changed.history is not None
    after = changed.record
    assert after.content == "Uses Neovim with pyright." and after.metadata == {"since": 2024}
    assert after.created == record.created and after.updated > record.updated
    assert reme.files.stat(after.path).frontmatter["tags"] == ["editor"]
    same = api.update(record.memory_id, user_name="alice", content="Uses Neovim with pyright.")
    assert same.action == "unchanged" and same.history is None
    messages = [entry.message for entry in reme.history.entries()]
    assert f"reme memory update {record.memory_id} (user_name=alice)" in messages
    assert f"reme memory add {record.memory_id} (user_name=alice)" in messages
    journal = (reme.state_dir / "journal.jsonl").read_text(encoding="utf-8")
    assert journal.count(record.path) >= 3  # add, frontmatter, update


def test_expected_hash_guards_updates_and_deletes(api: MemoryApi):
    record = api.add("Likes tea.", user_name="alice").record
    api.update(record.memory_id, user_name="alice", content="Likes green tea.")
    with pytest.raises(ConflictError, match="changed since it was read"):
        api.update(
            record.memory_id,
            user_name="alice",
            content="Likes coffee.",
            expected_hash=record.content_hash,
        )
    with pytest.raises(ConflictError):
        api.delete(record.memory_id, user_name="alice", expected_hash=record.content_hash)
    assert api.get(record.memory_id, user_name="alice").content == "Likes green tea."


def test_delete_is_in_history_and_can_be_reverted(reme: Reme, api: MemoryApi):
    record = api.add("Works from Lisbon.", user_name="alice").record
    deleted = api.delete(record.memory_id, user_name="alice")
    assert deleted.action == "deleted" and deleted.record.content == "Works from Lisbon."
    assert not (reme.root / record.path).exists()
    entry = reme.history.entries(1)[0]
    assert entry.message == f"reme memory delete {record.memory_id} (user_name=alice)"
    assert entry.verbs == [f"DELETE {record.path}"] and entry.run == deleted.history
    reme.revert(entry.run)
    assert api.get(record.memory_id, user_name="alice").content == "Works from Lisbon."


def test_without_git_the_change_stands_and_says_why(
    api: MemoryApi, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(history_module.shutil, "which", lambda _: None)
    added = api.add("Likes tea.", user_name="alice")
    assert added.history is None and "git" in (added.history_error or "")
    assert api.get(added.record.memory_id, user_name="alice").content == "Likes tea."


# -- scope isolation -------------------------------------------------------------------------


def test_one_users_records_never_reach_another_user(reme: Reme, api: MemoryApi):
    # Adversarial content: Alice's record is all about Bob, so any search for Bob finds it.
    alice = api.add(
        "Bob's password hint is 'tea'. Bob prefers tabs. Bob bob bob.",
        user_name="alice",
        when_to_use="Whenever Bob is mentioned",
    ).record
    bob = api.add("Prefers spaces.", user_name="bob").record
    assert reme.search("Bob password hint").hits[0].path == alice.path  # the index has it

    found = api.retrieve("Bob password hint tabs", user_name="bob", limit=10)
    assert [hit.record.memory_id for hit in found.hits] == []
    assert [r.memory_id for r in api.list(user_name="bob").records] == [bob.memory_id]
    for call in (
        lambda: api.get(alice.memory_id, user_name="bob"),
        lambda: api.update(alice.memory_id, user_name="bob", content="hijacked"),
        lambda: api.delete(alice.memory_id, user_name="bob"),
    ):
        with pytest.raises(NotFoundError, match="user_name=bob"):
            call()
    assert api.get(alice.memory_id, user_name="alice").content.startswith("Bob's password")
    # Same name, other type: a task called "alice" is another scope.
    with pytest.raises(NotFoundError):
        api.get(alice.memory_id, task_name="alice")
    assert api.list(task_name="alice").records == []


def test_a_record_planted_in_another_scopes_folder_is_not_shown(reme: Reme, api: MemoryApi):
    # A note in Bob's folder whose frontmatter says it is Alice's: neither sees it, since the
    # folder is only where search looks, and the frontmatter is what a read checks.
    planted = dump_note(
        {
            "memory_id": "planted1",
            "memory_type": "personal",
            "user_name": "alice",
            "created": "2026-11-01T00:00:00+00:00",
        },
        "Secret plans of Alice.\n",
    )
    reme.files.write("digest/personal/bob/planted1.md", planted)
    assert api.retrieve("secret plans", user_name="bob").hits == []
    assert api.list(user_name="bob").records == []
    with pytest.raises(NotFoundError):
        api.get("planted1", user_name="bob")
    assert api.retrieve("secret plans", user_name="alice").hits == []
    with pytest.raises(NotFoundError):
        api.get("planted1", user_name="alice")
    assert api.delete_all(user_name="bob").deleted == []
    assert (reme.root / "digest/personal/bob/planted1.md").exists()


def test_names_sharing_a_folder_stay_apart(reme: Reme, api: MemoryApi):
    upper = api.add("Upper likes cats.", user_name="Alice").record
    lower = api.add("Lower likes cats.", user_name="alice").record
    assert upper.path.rsplit("/", 1)[0] == lower.path.rsplit("/", 1)[0]  # one slug
    assert [h.record.memory_id for h in api.retrieve("cats", user_name="Alice").hits] == [
        upper.memory_id
    ]
    assert [r.memory_id for r in api.list(user_name="alice").records] == [lower.memory_id]
    assert api.delete_all(user_name="alice").deleted == [lower.memory_id]
    assert api.get(upper.memory_id, user_name="Alice").content == "Upper likes cats."


def test_delete_all_needs_a_scope_and_empties_only_that_one(reme: Reme, api: MemoryApi):
    for text in ("One.", "Two."):
        api.add(text, user_name="bob")
    kept = api.add("Alice's.", user_name="alice").record
    with pytest.raises(WorkspaceError, match="exactly one of user_name"):
        api.delete_all()
    with pytest.raises(WorkspaceError):
        api.delete_all(user_name="  ")
    assert len(files_under(reme.root)) == 3
    gone = api.delete_all(user_name="bob")
    assert len(gone.deleted) == 2 and gone.history is not None
    assert files_under(reme.root) == [kept.path]
    assert (
        reme.history.entries(1)[0].message == "reme memory delete_all: 2 record(s) (user_name=bob)"
    )


# -- list and retrieve ----------------------------------------------------------------------


def test_list_filters_sorts_and_limits(api: MemoryApi):
    ids = [
        api.add(
            f"Guidance {n}.",
            tool_name="web_search",
            when_to_use="searching" if n != 2 else "fetching pages",
            metadata={"success_rate": rate},
        ).record.memory_id
        for n, rate in ((1, 0.5), (2, 0.9), (3, 0.7))
    ]
    api.add("Without a rate.", tool_name="web_search")
    newest_first = api.list(tool_name="web_search")
    assert newest_first.total == 4 and newest_first.records[-1].memory_id == ids[0]
    by_rate = api.list(tool_name="web_search", sort_key="metadata.success_rate", reverse=False)
    assert [r.memory_id for r in by_rate.records[:3]] == [ids[0], ids[2], ids[1]]
    assert by_rate.records[3].content == "Without a rate."  # no key: last either way
    fetching = api.list(tool_name="web_search", filters=MemoryFilters(text="FETCHING"))
    assert [r.memory_id for r in fetching.records] == [ids[1]]
    rated = api.list(tool_name="web_search", filters=MemoryFilters(metadata={"success_rate": 0.7}))
    assert [r.memory_id for r in rated.records] == [ids[2]]
    # The ticking clock puts them a minute apart from 09:00 on 2 November.
    window = MemoryFilters(since="2026-11-02T09:01:00Z", until="2026-11-02T09:02:00Z")
    assert [r.memory_id for r in api.list(tool_name="web_search", filters=window).records] == [
        ids[2],
        ids[1],
    ]
    assert api.list(tool_name="web_search", filters=MemoryFilters(until="2026-11-02")).total == 4
    assert api.list(tool_name="web_search", filters=MemoryFilters(until="2026-11-01")).total == 0
    limited = api.list(tool_name="web_search", sort_key="created", reverse=False, limit=2)
    assert [r.memory_id for r in limited.records] == ids[:2] and limited.total == 4
    with pytest.raises(WorkspaceError, match="cannot sort"):
        api.list(tool_name="web_search", sort_key="path")


def test_list_reports_notes_in_the_folder_that_are_not_records(reme: Reme, api: MemoryApi):
    api.add("A fact.", user_name="carol")
    reme.files.write("digest/personal/carol/notes.md", "---\nname: Carol\n---\nfree text\n")
    listed = api.list(user_name="carol")
    assert len(listed.records) == 1
    assert listed.problems == {
        "digest/personal/carol/notes.md": "no valid memory_id in its frontmatter"
    }


def test_retrieve_ranks_within_the_scope_and_skips_inactive_records(reme: Reme, api: MemoryApi):
    deploy = api.add(
        "Run the smoke import before deploying.", task_name="deploy", when_to_use="deploying"
    ).record
    old = api.add("Deploy on Fridays with the old script.", task_name="deploy").record
    api.add("Deploy dashboards weekly.", task_name="reporting")
    reme.files.update_frontmatter(old.path, {"status": "superseded"})
    found = api.retrieve("deploy smoke", task_name="deploy")
    assert [h.record.memory_id for h in found.hits] == [deploy.memory_id]
    assert found.arms == ["keyword"] and 0 < found.hits[0].score <= 1
    assert api.list(task_name="deploy").total == 1
    everything = MemoryFilters(statuses=["active", "superseded"])
    assert api.list(task_name="deploy", filters=everything).total == 2


def test_bad_input_changes_nothing(reme: Reme, api: MemoryApi):
    with pytest.raises(WorkspaceError, match="success_rate"):
        api.add("Too good.", tool_name="grep", metadata={"success_rate": 2})
    with pytest.raises(WorkspaceError, match="does not match the scope"):
        api.add("Mismatch.", user_name="alice", memory_type="tool")
    with pytest.raises(WorkspaceError, match="empty"):
        api.add("   ", user_name="alice")
    with pytest.raises(WorkspaceError, match="memory id"):
        api.get("../../etc", user_name="alice")
    assert files_under(reme.root) == []
