"""The ``reme`` command line, run in-process with CliRunner against one copy of the example."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from conftest import copy_example

from reme_core.cli import cli

DEPLOY = "digest/procedure/deploy-process.md"
PERF = "daily/2026-11-10/session-perf-tuning.md"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One example copy for the whole module; tests that change it use their own notes."""
    root = tmp_path_factory.mktemp("cli") / "ws"
    copy_example(root)
    return root


def run(workspace: Path | None, *args: str, input: str | None = None) -> Result:
    argv = [*args, "--workspace", str(workspace)] if workspace is not None else list(args)
    return CliRunner().invoke(cli, argv, input=input, catch_exceptions=False)


def ok(workspace: Path | None, *args: str, input: str | None = None) -> Result:
    result = run(workspace, *args, input=input)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result


def ok_json(workspace: Path | None, *args: str, input: str | None = None) -> Any:
    return json.loads(ok(workspace, *args, "--json", input=input).stdout)


def fails(workspace: Path | None, *args: str, input: str | None = None) -> Result:
    result = run(workspace, *args, input=input)
    assert result.exit_code != 0, result.stdout
    assert "Traceback" not in result.output
    return result


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- init --------------------------------------------------------------------------------------


def test_init_creates_the_layout(tmp_path: Path) -> None:
    root = tmp_path / "fresh"
    result = ok(None, "init", str(root))
    assert "workspace ready" in result.stdout
    for folder in (
        "daily",
        "digest/personal",
        "digest/procedure",
        "digest/wiki",
        "resource",
        "sessions",
        ".reme",
    ):
        assert (root / folder).is_dir(), folder
    assert ".reme/" in (root / ".gitignore").read_text("utf-8")

    again = json.loads(ok(None, "init", str(root), "--json").stdout)
    assert again == {"workspace": str(root.resolve()), "created": []}
    assert ok_json(root, "status")["files"] == 0


# -- file tools ------------------------------------------------------------------------------


def test_write_from_stdin_and_content(workspace: Path) -> None:
    result = ok(workspace, "write", "digest/wiki/cli-stdin.md", input="# Stdin\n\nmarmoset notes\n")
    assert result.stdout.startswith("created digest/wiki/cli-stdin.md sha256=")
    assert (workspace / "digest/wiki/cli-stdin.md").read_text(
        "utf-8"
    ) == "# Stdin\n\nmarmoset notes\n"

    data = ok_json(
        workspace, "write", "digest/wiki/cli-content.md", "--content", "# C\n\ntamarin\n"
    )
    assert data["created"] is True and data["path"] == "digest/wiki/cli-content.md"
    assert data["content_hash"] == sha(workspace / "digest/wiki/cli-content.md")

    same = ok(workspace, "write", "digest/wiki/cli-content.md", "--content", "# C\n\ntamarin\n")
    assert same.stdout.startswith("unchanged ")
    # Indexed before the command returned: search without the sync pass finds both.
    hits = ok_json(workspace, "search", "marmoset tamarin", "--no-sync")["hits"]
    assert {h["path"] for h in hits} == {"digest/wiki/cli-stdin.md", "digest/wiki/cli-content.md"}


def test_read_with_line_range_and_json(workspace: Path) -> None:
    lines = (workspace / PERF).read_text("utf-8").splitlines()
    text = ok(workspace, "read", PERF, "--start-line", "2", "--end-line", "3").stdout
    assert text == "\n".join(lines[1:3]) + "\n"

    data = ok_json(workspace, "read", PERF, "--start-line", "9", "--end-line", "9")
    assert data["content"] == lines[8] + "\n"
    assert (data["start_line"], data["end_line"]) == (9, 9)
    assert data["total_lines"] == len(lines)
    assert data["content_hash"] == sha(workspace / PERF)

    missing = fails(workspace, "read", "digest/wiki/nope.md")
    assert "does not exist" in missing.stderr


def test_edit_with_the_wrong_count_changes_nothing(workspace: Path) -> None:
    path = workspace / "digest/wiki/cli-edit.md"
    ok(workspace, "write", "digest/wiki/cli-edit.md", "--content", "# E\n\nloris loris\n")
    before = path.read_bytes()

    result = fails(workspace, "edit", "digest/wiki/cli-edit.md", "--old", "loris", "--new", "lemur")
    assert "found 2 occurrence(s)" in result.stderr and "expected 1" in result.stderr
    result = fails(workspace, "edit", "digest/wiki/cli-edit.md", "--old", "gibbon", "--new", "x")
    assert "found 0 occurrence(s)" in result.stderr
    assert path.read_bytes() == before

    done = ok(
        workspace,
        "edit",
        "digest/wiki/cli-edit.md",
        "--old",
        "loris",
        "--new",
        "lemur",
        "--count",
        "2",
    )
    assert "2 replacement(s)" in done.stdout
    assert path.read_text("utf-8") == "# E\n\nlemur lemur\n"


def test_write_with_a_stale_hash_is_a_conflict(workspace: Path) -> None:
    path = workspace / "digest/wiki/cli-conflict.md"
    ok(workspace, "write", "digest/wiki/cli-conflict.md", "--content", "# V1\n")
    before = path.read_bytes()
    result = fails(
        workspace,
        "write",
        "digest/wiki/cli-conflict.md",
        "--content",
        "# V2\n",
        "--expected-hash",
        "0" * 64,
    )
    assert "changed since it was read" in result.stderr
    assert path.read_bytes() == before

    ok(
        workspace,
        "write",
        "digest/wiki/cli-conflict.md",
        "--content",
        "# V2\n",
        "--expected-hash",
        sha(path),
    )
    assert path.read_text("utf-8") == "# V2\n"


def test_write_outside_the_workspace_is_refused(workspace: Path) -> None:
    outside = workspace.parent / "escape.md"
    result = fails(workspace, "write", "../escape.md", "--content", "# Escape\n")
    assert "'..'" in result.stderr
    assert not outside.exists()
    absolute = fails(workspace, "write", str(outside), "--content", "# Escape\n")
    assert "outside the workspace" in absolute.stderr
    assert not outside.exists()
    internal = fails(workspace, "write", ".reme/evil.md", "--content", "# Evil\n")
    assert ".reme" in internal.stderr
    assert not (workspace / ".reme/evil.md").exists()


def test_binary_content_is_refused(workspace: Path) -> None:
    result = fails(workspace, "write", "digest/wiki/cli-binary.md", input="# B\n\x00\x01binary\n")
    assert "NUL" in result.stderr
    assert not (workspace / "digest/wiki/cli-binary.md").exists()


def test_frontmatter_set_keeps_comments_and_other_keys(workspace: Path) -> None:
    original = (workspace / DEPLOY).read_text("utf-8")
    assert "# reviewed after the 2026-11-02 failure" in original
    shown = ok_json(workspace, "frontmatter", DEPLOY)
    assert shown["frontmatter"]["status"] == "active"

    ok(workspace, "frontmatter", DEPLOY, "--field", "status=archived")

    text = (workspace / DEPLOY).read_text("utf-8")
    assert "# reviewed after the 2026-11-02 failure; step 5 is new" in text
    assert "status: archived" in text
    assert text.replace("status: archived", "status: active") == original
    data = ok_json(workspace, "frontmatter", DEPLOY)["frontmatter"]
    assert data["status"] == "archived"
    assert data["name"] == "Deploying Larkspur to production"
    assert data["tags"] == ["deploy", "systemd", "procedure", "larkspur"]
    # Archived notes leave default searches at once.
    default = ok_json(workspace, "search", "smoke import", "--no-sync", "--no-expand")
    assert DEPLOY not in {h["path"] for h in default["hits"]}
    archived = ok_json(workspace, "search", "smoke import", "--status", "archived", "--no-sync")
    assert {h["path"] for h in archived["hits"]} == {DEPLOY}

    ok(workspace, "frontmatter", DEPLOY, "--field", "status=active")
    assert (workspace / DEPLOY).read_text("utf-8") == original
    bad = fails(workspace, "frontmatter", DEPLOY, "--field", "status=deleted")
    assert "status" in bad.stderr
    assert (workspace / DEPLOY).read_text("utf-8") == original


def test_move_and_delete(workspace: Path) -> None:
    ok(workspace, "write", "digest/wiki/cli-target.md", "--content", "# Target\n\nquetzal\n")
    ok(
        workspace,
        "write",
        "digest/wiki/cli-linker.md",
        "--content",
        "# Linker\n\nSee [[cli-target]].\n",
    )

    moved = ok(workspace, "move", "digest/wiki/cli-target.md", "digest/wiki/cli-moved.md")
    assert "moved digest/wiki/cli-target.md -> digest/wiki/cli-moved.md" in moved.stdout
    assert "digest/wiki/cli-linker.md" in moved.stdout
    assert not (workspace / "digest/wiki/cli-target.md").exists()
    assert "[[cli-moved]]" in (workspace / "digest/wiki/cli-linker.md").read_text("utf-8")
    hits = ok_json(workspace, "search", "quetzal", "--no-sync")["hits"]
    assert [h["path"] for h in hits] == ["digest/wiki/cli-moved.md"]

    deleted = ok(workspace, "delete", "digest/wiki/cli-moved.md")
    assert "deleted digest/wiki/cli-moved.md; still linked from:" in deleted.stdout
    assert "  digest/wiki/cli-linker.md" in deleted.stdout
    assert not (workspace / "digest/wiki/cli-moved.md").exists()
    assert ok_json(workspace, "search", "quetzal", "--no-sync")["hits"] == []
    fails(workspace, "delete", "digest/wiki/cli-moved.md")


def test_ls_and_stat(workspace: Path) -> None:
    listing = ok(workspace, "ls", "digest").stdout.splitlines()
    assert {"digest/personal/", "digest/procedure/", "digest/wiki/"} <= set(listing)
    entries = ok_json(workspace, "ls", "digest/wiki", "--recursive")["entries"]
    paths = {e["path"]: e for e in entries}
    assert paths["digest/wiki/postgres-tuning.md"]["kind"] == "file"
    assert (
        paths["digest/wiki/postgres-tuning.md"]["size"]
        == (workspace / "digest/wiki/postgres-tuning.md").stat().st_size
    )
    top = ok(workspace, "ls").stdout
    assert ".reme" not in top and "daily/" in top

    stat = ok_json(workspace, "stat", PERF)
    assert stat["content_hash"] == sha(workspace / PERF)
    assert stat["line_count"] == len((workspace / PERF).read_text("utf-8").splitlines())
    assert stat["is_note"] is True
    assert stat["frontmatter"]["session_id"] == "s-2026-11-10-perf"
    assert f"path: {PERF}" in ok(workspace, "stat", PERF).stdout


# -- search ----------------------------------------------------------------------------------


def test_search_json_has_hits_and_arms(workspace: Path) -> None:
    data = ok_json(workspace, "search", "数据库连接池")
    assert data["arms"] == ["keyword"]
    assert data["hits"][0]["path"] == PERF
    assert data["hits"][0]["score"] == 1.0
    assert "linked" in data

    text = ok(workspace, "search", "postgres", "-n", "2").stdout.splitlines()
    assert text[0] == "arms: keyword"
    assert text[1].startswith("1.000  ")
    assert len([line for line in text if not line.startswith(" ")]) == 3


def test_search_filters_from_the_command_line(workspace: Path) -> None:
    tagged = ok_json(workspace, "search", "postgres", "--tag", "incident", "--no-expand")
    assert {h["path"] for h in tagged["hits"]} == {"resource/runbook-incident-2026-11.md"}
    both = ok_json(
        workspace, "search", "postgres", "--tag", "performance", "--tag", "wiki", "--all-tags"
    )
    assert {h["path"] for h in both["hits"]} == {"digest/wiki/postgres-tuning-2026.md"}
    under = ok_json(workspace, "search", "postgres", "--path", "daily", "--limit", "50")
    assert under["hits"] and all(h["path"].startswith("daily/") for h in under["hits"])
    dated = ok_json(
        workspace, "search", "postgres", "--since", "2026-11-08", "--until", "2026-11-10"
    )
    assert {h["path"] for h in dated["hits"]} == {PERF, "digest/wiki/postgres-tuning-2026.md"}
    strict = ok_json(workspace, "search", "postgres", "--min-score", "0.99")
    assert [h["score"] for h in strict["hits"]] == [1.0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("search", "postgres", "--status", "bogus"), "'active', 'archived' or 'superseded'"),
        (("search", "postgres", "--limit", "0"), "limit must be between 1 and 200"),
        (("search", "postgres", "--min-score", "1.5"), "min_score"),
        (("search", "postgres", "--since", "2026-11-10", "--until", "2026-11-01"), "after"),
        (("search", "  "), "empty query"),
    ],
)
def test_search_errors(workspace: Path, args: tuple[str, ...], message: str) -> None:
    result = fails(workspace, *args)
    assert message in result.stderr
    assert result.stderr.startswith("error: ")


def test_search_bad_date_is_a_usage_error(workspace: Path) -> None:
    result = fails(workspace, "search", "postgres", "--since", "yesterday")
    assert result.exit_code == 2
    assert "YYYY-MM-DD" in result.output


def test_errors_under_json_are_a_json_object(workspace: Path) -> None:
    result = fails(workspace, "search", "postgres", "--status", "bogus", "--json")
    error = json.loads(result.stdout)["error"]
    assert error["type"] == "SearchError"
    assert "superseded" in error["message"]

    result = fails(workspace, "read", "digest/wiki/nope.md", "--json")
    assert json.loads(result.stdout)["error"]["type"] == "NotFoundError"

    result = fails(workspace, "status", "--json", "--set", "search.limt=5")
    assert "search.limt" in json.loads(result.stdout)["error"]["message"]

    plain = fails(workspace, "read", "digest/wiki/nope.md")
    assert plain.stdout == ""


# -- index, status -----------------------------------------------------------------------------


def test_index_reindex_status(workspace: Path) -> None:
    first = ok_json(workspace, "index")
    assert first["problems"] == {}
    again = ok_json(workspace, "index")
    assert again["indexed"] == [] and again["removed"] == []
    files = again["unchanged"]
    assert files >= 15

    (workspace / "digest/wiki/cli-bad.md").write_bytes(b"# Bad\n\xff\xfe\n")
    try:
        text = ok(workspace, "index").stdout
        assert text.startswith("indexed 0, removed 0, unchanged")
        assert "problem: digest/wiki/cli-bad.md" in text
        status = ok_json(workspace, "status")
        assert status["files"] == files
        assert "digest/wiki/cli-bad.md" in status["problems"]
        assert status["keyword_index"]["name"] == "bm25s"
        assert status["vectors"]["state"] == "off"
        plain = ok(workspace, "status").stdout
        assert f"files: {files}" in plain and "problem: digest/wiki/cli-bad.md" in plain
    finally:
        (workspace / "digest/wiki/cli-bad.md").unlink()

    rebuilt = ok_json(workspace, "reindex")
    assert len(rebuilt["indexed"]) == files
    assert rebuilt["problems"] == {}
    status = ok_json(workspace, "status")
    assert status["files"] == files and status["problems"] == {}


# -- config, plugins, components ---------------------------------------------------------------


def test_config_show_with_overrides(workspace: Path) -> None:
    text = ok(workspace, "config", "show", "--set", "search.limit=5").stdout
    assert "limit: 5" in text
    data = ok_json(workspace, "config", "show", "--set", "search.limit=5")
    assert data["search"]["limit"] == 5
    assert data["workspace"] == str(workspace.resolve())
    assert data["components"]["keyword_index"]["name"] == "bm25s"
    assert ok_json(workspace, "config", "show")["search"]["limit"] == 10


def test_config_show_names_a_bad_key(workspace: Path) -> None:
    result = fails(workspace, "config", "show", "--set", "search.limt=5")
    assert "search.limt" in result.stderr
    assert "limit" in result.stderr  # the suggestion


def test_unknown_component_lists_what_is_available(workspace: Path) -> None:
    override = ("--set", "components.keyword_index.name=nope")
    for args in (
        ("config", "show", *override),
        ("status", *override),
        ("search", "postgres", *override),
    ):
        result = fails(workspace, *args)
        assert "components.keyword_index.name" in result.stderr, args
        assert "'nope'" in result.stderr and "bm25s" in result.stderr, args


def test_plugins_lists_the_shipped_defaults(workspace: Path) -> None:
    infos = ok_json(None, "plugins", "--all")
    reme = next(info for info in infos if info["name"] == "reme")
    assert {
        "register_chunkers",
        "register_graphs",
        "register_keyword_indexes",
        "register_tag_indexes",
    } <= set(reme["hooks"])
    assert "reme_plugins.keyword_bm25s" in reme["modules"]
    without_defaults = ok_json(None, "plugins")
    assert "reme" not in {info["name"] for info in without_defaults}


def test_components_json(workspace: Path) -> None:
    table = ok_json(None, "components")
    names = {kind: {entry["name"] for entry in entries} for kind, entries in table.items()}
    assert "bm25s" in names["keyword_index"]
    assert "sqlite" in names["graph"] and "sqlite" in names["tag_index"]
    assert {"markdown", "text", "jsonl"} <= names["chunker"]
    assert "command" in table
    provider = next(e["provider"] for e in table["keyword_index"] if e["name"] == "bm25s")
    assert provider.startswith("reme")
