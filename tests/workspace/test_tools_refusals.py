"""Every refusal must leave the disk (notes, journal, everything) exactly as it was."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from reme_core.errors import (
    ConflictError,
    EditError,
    FrontmatterError,
    NotFoundError,
    PathOutsideWorkspaceError,
    UnsupportedFileError,
    WorkspaceError,
)
from reme_core.workspace import FileTools, Journal, find_state_dir

Refusal = Callable[..., None]
GOOD = "---\nname: Good\n---\nbody [[good]]\n"


@pytest.fixture
def seeded(tools: FileTools, workspace: Path, tmp_path: Path) -> FileTools:
    tools.write("good.md", GOOD)
    tools.write("other.md", "links to [[good]]\n")
    (workspace / "binary.md").write_bytes(b"---\nname: x\n---\n\0\1\2")
    (workspace / "latin1.md").write_bytes("caf\xe9\n".encode("latin-1"))
    (workspace / "notes.txt").write_text("plain text\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("secret\n")
    os.symlink(outside, workspace / "escape")
    return tools


TRAVERSAL = ["../x.md", "/etc/passwd", "escape/secret.md", "escape/new.md", "a\0.md", ""]


@pytest.mark.parametrize("bad", TRAVERSAL)
@pytest.mark.parametrize("tool", ["read", "stat", "write", "edit", "frontmatter", "delete", "move"])
def test_path_traversal_refused(
    seeded: FileTools, workspace: Path, bad: str, tool: str, assert_refused: Refusal
) -> None:
    calls: dict[str, Callable[[], object]] = {
        "read": lambda: seeded.read(bad),
        "stat": lambda: seeded.stat(bad),
        "write": lambda: seeded.write(bad, "x\n"),
        "edit": lambda: seeded.edit(bad, "secret", "x"),
        "frontmatter": lambda: seeded.update_frontmatter(bad, {"a": 1}),
        "delete": lambda: seeded.delete(bad),
        "move": lambda: seeded.move("good.md", bad),
    }
    assert_refused(workspace, calls[tool], PathOutsideWorkspaceError)


def test_move_from_outside_refused(
    seeded: FileTools, workspace: Path, assert_refused: Refusal
) -> None:
    assert_refused(
        workspace, lambda: seeded.move("escape/secret.md", "s.md"), PathOutsideWorkspaceError
    )
    assert_refused(workspace, lambda: seeded.ls("escape"), PathOutsideWorkspaceError)


def test_writes_into_reme_refused(
    seeded: FileTools, workspace: Path, assert_refused: Refusal
) -> None:
    assert_refused(workspace, lambda: seeded.write(".reme/x.md", "x"), PathOutsideWorkspaceError)
    assert_refused(workspace, lambda: seeded.write(".git/x.md", "x"), PathOutsideWorkspaceError)


@pytest.mark.parametrize("name", ["binary.md", "latin1.md"])
def test_binary_files_refused_by_every_tool(
    seeded: FileTools, workspace: Path, name: str, assert_refused: Refusal
) -> None:
    for call in [
        lambda: seeded.read(name),
        lambda: seeded.stat(name),
        lambda: seeded.write(name, "x\n"),
        lambda: seeded.edit(name, "x", "y"),
        lambda: seeded.update_frontmatter(name, {"a": 1}),
        lambda: seeded.move(name, "moved.md"),
        lambda: seeded.delete(name),
    ]:
        assert_refused(workspace, call, UnsupportedFileError)


def test_huge_files_refused(workspace: Path, assert_refused: Refusal) -> None:
    small = FileTools(workspace, journal=Journal(find_state_dir(workspace)), max_file_bytes=100)
    (workspace / "big.md").write_text("x" * 101)
    for call in [
        lambda: small.read("big.md"),
        lambda: small.stat("big.md"),
        lambda: small.edit("big.md", "x", "y", expected_count=101),
        lambda: small.delete("big.md"),
        lambda: small.write("new.md", "y" * 101),
    ]:
        assert_refused(workspace, call, UnsupportedFileError, "100-byte limit")


@pytest.mark.parametrize(
    "content",
    [
        "---\nname: [broken\n---\nbody\n",
        "---\n- a list\n---\n",
        "---\nstatus: draft\n---\n",
        "---\nname: unclosed\n",
        "nul \0 byte\n",
    ],
)
def test_bad_content_writes_nothing(
    seeded: FileTools, workspace: Path, content: str, assert_refused: Refusal
) -> None:
    error = UnsupportedFileError if "\0" in content else FrontmatterError
    assert_refused(workspace, lambda: seeded.write("good.md", content), error)
    assert_refused(workspace, lambda: seeded.write("fresh.md", content), error)


def test_edit_that_breaks_frontmatter_refused(
    seeded: FileTools, workspace: Path, assert_refused: Refusal
) -> None:
    assert_refused(
        workspace, lambda: seeded.edit("good.md", "name: Good", "name: [x"), FrontmatterError
    )
    assert_refused(
        workspace,
        lambda: seeded.update_frontmatter("good.md", {"status": "draft"}),
        FrontmatterError,
        "draft",
    )


def test_non_markdown_refused_by_mutating_tools(
    seeded: FileTools, workspace: Path, assert_refused: Refusal
) -> None:
    for call in [
        lambda: seeded.write("notes.txt", "x"),
        lambda: seeded.edit("notes.txt", "plain", "x"),
        lambda: seeded.update_frontmatter("notes.txt", {"a": 1}),
        lambda: seeded.move("notes.txt", "n.md"),
        lambda: seeded.move("good.md", "good.txt"),
        lambda: seeded.delete("notes.txt"),
    ]:
        assert_refused(workspace, call, UnsupportedFileError, r"\.md")
    assert seeded.read("notes.txt").content == "plain text\n"


def test_conflicts(seeded: FileTools, workspace: Path, assert_refused: Refusal) -> None:
    stale = "0" * 64
    for call in [
        lambda: seeded.write("good.md", "new\n", expected_hash=stale),
        lambda: seeded.write("missing.md", "new\n", expected_hash=stale),
        lambda: seeded.edit("good.md", "body", "x", expected_hash=stale),
        lambda: seeded.update_frontmatter("good.md", {"a": 1}, expected_hash=stale),
        lambda: seeded.move("good.md", "moved.md", expected_hash=stale),
        lambda: seeded.delete("good.md", expected_hash=stale),
        lambda: seeded.move("good.md", "other.md"),
    ]:
        assert_refused(workspace, call, ConflictError)


@pytest.mark.parametrize(
    ("old", "count", "match"),
    [("missing text", 1, "found 0 .* expected 1"), ("o", 1, "found [2-9]"), ("body", 2, "found 1")],
)
def test_bad_edit_count(
    seeded: FileTools, workspace: Path, old: str, count: int, match: str, assert_refused: Refusal
) -> None:
    assert_refused(
        workspace, lambda: seeded.edit("good.md", old, "x", expected_count=count), EditError, match
    )


def test_missing_files(seeded: FileTools, workspace: Path, assert_refused: Refusal) -> None:
    for call in [
        lambda: seeded.read("nope.md"),
        lambda: seeded.stat("nope.md"),
        lambda: seeded.edit("nope.md", "a", "b"),
        lambda: seeded.delete("nope.md"),
        lambda: seeded.move("nope.md", "x.md"),
        lambda: seeded.ls("nope"),
    ]:
        assert_refused(workspace, call, NotFoundError)


def test_writing_over_a_folder_refused(
    seeded: FileTools, workspace: Path, assert_refused: Refusal
) -> None:
    (workspace / "dir.md").mkdir()
    assert_refused(workspace, lambda: seeded.write("dir.md", "x"), WorkspaceError, "folder")


@pytest.mark.parametrize("allowed", [[], ["daily/**"], ["digest/wiki/*.md"]])
def test_allowed_paths_violations(
    seeded: FileTools, workspace: Path, allowed: list[str], assert_refused: Refusal
) -> None:
    inner = seeded.confined(allowed)
    for call in [
        lambda: inner.read("good.md"),
        lambda: inner.stat("good.md"),
        lambda: inner.write("good.md", "x\n"),
        lambda: inner.write("digest/wiki/sub/x.md", "x\n"),
        lambda: inner.edit("good.md", "body", "x"),
        lambda: inner.update_frontmatter("good.md", {"a": 1}),
        lambda: inner.delete("good.md"),
        lambda: inner.move("good.md", "daily/good.md"),
        lambda: inner.ls("resource"),
    ]:
        assert_refused(workspace, call, PathOutsideWorkspaceError, "allowed")


def test_empty_allowed_list_lists_nothing(seeded: FileTools) -> None:
    with pytest.raises(PathOutsideWorkspaceError, match="allowed"):
        seeded.confined([]).ls(recursive=True)
    assert seeded.confined(["nothing-here/**"]).ls(recursive=True).entries == []


def test_confined_move_refuses_rewriting_links_outside(
    seeded: FileTools, workspace: Path, assert_refused: Refusal
) -> None:
    seeded.write("daily/a.md", "A\n")
    seeded.write("digest/wiki/ref.md", "[[daily/a]]\n")
    inner = seeded.confined(["daily/**"])
    assert_refused(
        workspace,
        lambda: inner.move("daily/a.md", "daily/b.md"),
        PathOutsideWorkspaceError,
        "ref.md",
    )
