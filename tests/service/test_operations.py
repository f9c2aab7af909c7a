"""The operations layer: one definition per operation, shared by HTTP, MCP and the CLI client."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conftest import KEYWORD_ONLY_ENV, copy_example
from pydantic import ValidationError

from reme_core.errors import NotFoundError, PathOutsideWorkspaceError
from reme_core.runtime import Reme
from reme_core.service.operations import OPERATIONS, allows

DEPLOY = "digest/procedure/deploy-process.md"


@pytest.fixture(scope="module")
def reme(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Reme]:
    root = tmp_path_factory.mktemp("ops") / "ws"
    copy_example(root)
    with Reme.open(root, env=KEYWORD_ONLY_ENV) as opened:
        opened.index()
        yield opened


def test_the_issue_lists_every_operation_with_its_profile():
    profiles = {name: op.profile for name, op in OPERATIONS.items()}
    assert profiles == {
        **dict.fromkeys(["search", "read", "list", "stat", "traverse", "status"], "read"),
        **dict.fromkeys(["memory_get", "memory_list", "memory_retrieve"], "read"),
        **dict.fromkeys(
            [
                *("write", "edit", "frontmatter", "auto_memory", "auto_memory_cc"),
                *("auto_memory_codex", "auto_resource"),
            ],
            "write",
        ),
        **dict.fromkeys(["memory_add", "memory_update", "memory_summarize"], "write"),
        **dict.fromkeys(["move", "delete", "dream", "run", "reindex"], "admin"),
        **dict.fromkeys(["memory_delete", "memory_delete_all"], "admin"),
        **dict.fromkeys(["review_list", "review_show"], "read"),
        **dict.fromkeys(["links", "history", "history_show"], "read"),
        "revert": "admin",
        **dict.fromkeys(["forget", "expire"], "admin"),
        **{"proactive": "read", "proactive_run": "write"},
        "review_reject": "write",
        "review_approve": "admin",
    }
    assert all(OPERATIONS[name].read_only for name, p in profiles.items() if p == "read")
    assert {n for n, op in OPERATIONS.items() if op.destructive} == {
        "move",
        "delete",
        "dream",
        "memory_delete",
        "memory_delete_all",
        "review_approve",
        "revert",
        "run",
        "forget",
    }


def test_profiles_nest():
    assert allows("admin", "write") and allows("write", "read") and allows("read", "read")
    assert not allows("read", "write") and not allows("write", "admin")


def test_read_operations_return_json_ready_data(reme: Reme):
    hits = OPERATIONS["search"].call(reme, {"query": "deploy", "limit": 3})["hits"]
    assert hits and isinstance(hits[0]["path"], str)
    assert OPERATIONS["read"].call(reme, {"path": DEPLOY, "end_line": 3})["content"]
    assert OPERATIONS["stat"].call(reme, {"path": DEPLOY})["path"] == DEPLOY
    listed = OPERATIONS["list"].call(reme, {"path": "digest", "recursive": True})
    assert any(e["path"] == DEPLOY for e in listed["entries"])
    assert OPERATIONS["status"].call(reme, {})["files"] > 0


def test_traverse_walks_links_both_ways_within_its_bounds(reme: Reme):
    one = OPERATIONS["traverse"].call(reme, {"path": DEPLOY, "depth": 1})
    assert one["start"] == DEPLOY and not one["truncated"]
    depths = {n["path"]: n["depth"] for n in one["nodes"]}
    assert depths[DEPLOY] == 0 and set(depths.values()) == {0, 1}
    inbound = {e["from"] for e in one["edges"] if e["to"] == DEPLOY}
    outbound = {e["to"] for e in one["edges"] if e["from"] == DEPLOY}
    assert inbound and outbound  # both directions
    capped = OPERATIONS["traverse"].call(reme, {"path": DEPLOY, "depth": 3, "max_nodes": 3})
    assert len(capped["nodes"]) == 3 and capped["truncated"]
    with pytest.raises(ValidationError):
        OPERATIONS["traverse"].call(reme, {"path": DEPLOY, "depth": 9})
    with pytest.raises(NotFoundError):
        OPERATIONS["traverse"].call(reme, {"path": "digest/none.md"})


def test_callers_cannot_supply_the_confinement_or_unknown_fields(reme: Reme):
    with pytest.raises(ValidationError, match="allowed_paths"):
        OPERATIONS["write"].call(
            reme, {"path": "daily/x.md", "content": "# X\n", "allowed_paths": ["daily/**"]}
        )
    assert not (reme.root / "daily/x.md").exists()


def test_writes_are_confined(reme: Reme):
    with pytest.raises(PathOutsideWorkspaceError):
        OPERATIONS["write"].call(reme, {"path": "../escape.md", "content": "# no\n"})
    assert not (reme.root.parent / "escape.md").exists()


def test_write_then_search_and_pipelines_run_by_name(reme: Reme):
    written = OPERATIONS["write"].call(
        reme, {"path": "daily/2026-11-29/ops.md", "content": "# Ops\n\nquokka sighting\n"}
    )
    assert written["created"]
    assert OPERATIONS["search"].call(reme, {"query": "quokka"})["hits"][0]["path"] == (
        "daily/2026-11-29/ops.md"
    )
    result = OPERATIONS["auto_memory"].call(
        reme,
        {
            "session_id": "ops1",
            "date": "2026-11-29",
            "messages": [{"role": "user", "content": "Remember: the wombat is called Kip."}],
        },
    )
    assert result["pipeline"] == "auto_memory" and result["outputs"]["status"] == "unsummarised"
    assert (reme.root / "sessions/ops1.jsonl").is_file()
