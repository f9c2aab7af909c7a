"""The record format: scope rules, folder names, and the note a record is written as."""

from __future__ import annotations

import datetime as dt

import pytest

from reme_core.errors import WorkspaceError
from reme_core.memory import MemoryScope
from reme_core.memory.layout import record_path, scope_folder, slug
from reme_core.memory.note import NotARecord, clean_content, clean_sources, parse, render
from reme_core.workspace.frontmatter import dump_note

WHEN = dt.datetime(2026, 11, 2, 9, 30, tzinfo=dt.UTC)


def test_a_scope_is_exactly_one_name_and_decides_the_type():
    assert MemoryScope.of(user_name=" alice ").memory_type == "personal"
    assert MemoryScope.of(task_name="deploy").key == "task_name"
    assert MemoryScope.of(tool_name="web_search").describe() == "tool_name=web_search"
    assert MemoryScope.of(user_name="alice").value == "alice"  # stripped
    for given in ({}, {"user_name": "  "}, {"user_name": "a", "tool_name": "b"}):
        with pytest.raises(WorkspaceError, match="exactly one of user_name"):
            MemoryScope.of(**given)
    with pytest.raises(WorkspaceError, match="control characters"):
        MemoryScope.of(user_name="alice\nuser_name: bob")


def test_folders_follow_the_digest_buckets_and_ids_cannot_escape():
    assert scope_folder(MemoryScope.of(user_name="Alice Smith")) == "digest/personal/alice-smith"
    assert scope_folder(MemoryScope.of(task_name="Deploy v2")) == "digest/procedure/deploy-v2"
    assert scope_folder(MemoryScope.of(tool_name="web.search")) == "digest/wiki/tools/web-search"
    assert slug("张三") == "张三"
    dots = slug("../..")
    assert dots.startswith("x-") and dots != slug("..")  # no letters: a hash, never a path part
    with pytest.raises(WorkspaceError, match="memory id"):
        record_path(MemoryScope.of(user_name="a"), "../../daily/x")


def test_render_and_parse_round_trip():
    scope = MemoryScope.of(tool_name="web_search")
    text = render(
        memory_id="abc123",
        scope=scope,
        content="Quote exact phrases.\n\nLong queries time out.",
        when_to_use="Searching the web for an error message",
        metadata={"success_rate": 0.75, "tips": ["use quotes"]},
        created=WHEN,
        updated=WHEN,
        sources=["sessions/s1.jsonl"],
    )
    assert "## When to use\n\nSearching the web" in text and "- [[sessions/s1.jsonl]]" in text
    record = parse("digest/wiki/tools/web-search/abc123.md", text, "h")
    assert record.memory_type == "tool" and record.tool_name == "web_search"
    assert record.content == "Quote exact phrases.\n\nLong queries time out."
    assert record.when_to_use == "Searching the web for an error message"
    assert record.metadata == {"success_rate": 0.75, "tips": ["use quotes"]}
    assert record.created == WHEN and record.sources == ["sessions/s1.jsonl"]


def test_links_added_under_sources_count_as_sources():
    # What dream's CORROBORATE does to a node: one more link in its Sources section.
    text = render(
        memory_id="abc123",
        scope=MemoryScope.of(user_name="alice"),
        content="Likes tea.",
        when_to_use="",
        metadata={},
        created=WHEN,
        updated=WHEN,
        sources=["sessions/s1.jsonl"],
    )
    text += "- [[daily/2026-11-03/session-x]]\n"
    record = parse("digest/personal/alice/abc123.md", text, "h")
    assert record.sources == ["sessions/s1.jsonl", "daily/2026-11-03/session-x"]
    assert record.content == "Likes tea."


def test_content_that_the_format_could_not_give_back_is_refused():
    with pytest.raises(WorkspaceError, match="empty"):
        clean_content(" \n ")
    with pytest.raises(WorkspaceError, match="## Sources"):
        clean_content("fact\n\n## Sources\n- [[x]]")
    with pytest.raises(WorkspaceError, match="not a link target"):
        clean_sources(["a]]b"])
    assert clean_sources(["[[x]]", "x", " y "]) == ["x", "y"]


@pytest.mark.parametrize(
    ("front", "reason"),
    [
        ({"name": "plain note"}, "memory_id"),
        ({"memory_id": "a1", "memory_type": "secret"}, "memory_type"),
        ({"memory_id": "a1", "memory_type": "personal"}, "user_name"),
        ({"memory_id": "a1", "memory_type": "personal", "user_name": "x"}, "created"),
        (
            {"memory_id": "a1", "memory_type": "personal", "user_name": "x", "created": "soon"},
            "ISO 8601",
        ),
    ],
)
def test_notes_that_are_not_records_say_why(front: dict, reason: str):
    with pytest.raises(NotARecord, match=reason):
        parse("digest/personal/x/a1.md", dump_note(front, "text\n"), "h")
