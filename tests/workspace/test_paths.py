from __future__ import annotations

import os
from pathlib import Path

import pytest

from reme_core.errors import PathOutsideWorkspaceError
from reme_core.workspace import WorkspacePaths
from reme_core.workspace.paths import may_contain, path_matches


@pytest.fixture
def paths(tmp_path: Path) -> WorkspacePaths:
    root = tmp_path / "ws"
    (root / "daily").mkdir(parents=True)
    return WorkspacePaths(root)


def test_resolve_normalises(paths: WorkspacePaths) -> None:
    rel, absolute = paths.resolve("./daily//a.md")
    assert rel == "daily/a.md"
    assert absolute == paths.root / "daily" / "a.md"


def test_absolute_inside_root_is_made_relative(paths: WorkspacePaths) -> None:
    rel, _ = paths.resolve(str(paths.root / "daily" / "a.md"))
    assert rel == "daily/a.md"


@pytest.mark.parametrize(
    "bad",
    ["", "   ", "../x.md", "daily/../../x.md", "a/..", "/etc/passwd", "a\0b.md", "..\\x.md"],
)
def test_resolve_rejects_escapes(paths: WorkspacePaths, bad: str) -> None:
    with pytest.raises(PathOutsideWorkspaceError):
        paths.resolve(bad)


def test_dotdot_inside_is_still_rejected(paths: WorkspacePaths) -> None:
    # Even a '..' that would land inside the workspace is refused: no path games at all.
    with pytest.raises(PathOutsideWorkspaceError, match=r"'\.\.'"):
        paths.resolve("daily/../daily/a.md")


def test_symlink_escape_rejected(paths: WorkspacePaths, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, paths.root / "link")
    with pytest.raises(PathOutsideWorkspaceError, match="symbolic link"):
        paths.resolve("link/new.md", for_write=True)
    os.symlink(outside / "missing.md", paths.root / "dangling.md")
    with pytest.raises(PathOutsideWorkspaceError):
        paths.resolve("dangling.md")


def test_symlink_inside_is_accepted(paths: WorkspacePaths) -> None:
    os.symlink(paths.root / "daily", paths.root / "alias")
    rel, _ = paths.resolve("alias/x.md")
    assert rel == "alias/x.md"


@pytest.mark.parametrize("internal", [".reme/catalog.db", ".git/config", ".reme"])
def test_writes_to_internal_folders_rejected(paths: WorkspacePaths, internal: str) -> None:
    with pytest.raises(PathOutsideWorkspaceError, match="derived state"):
        paths.resolve(internal, for_write=True)
    assert paths.resolve(internal)[0] == internal  # reading is a separate decision


def test_allowed_paths(paths: WorkspacePaths) -> None:
    allowed = ["daily/**", "digest/wiki/*.md", "resource"]
    assert paths.resolve("daily/2024-01-01/a.md", allowed_paths=allowed)[0]
    assert paths.resolve("digest/wiki/a.md", allowed_paths=allowed)[0]
    assert paths.resolve("resource/x/y.txt", allowed_paths=allowed)[0]
    for bad in ["digest/wiki/sub/a.md", "digest/personal/a.md", "resourcex/a.md", "a.md"]:
        with pytest.raises(PathOutsideWorkspaceError, match="allowed"):
            paths.resolve(bad, allowed_paths=allowed)


def test_empty_allowed_list_allows_nothing(paths: WorkspacePaths) -> None:
    with pytest.raises(PathOutsideWorkspaceError, match="none"):
        paths.resolve("daily/a.md", allowed_paths=[])


def test_allowed_entry_with_dotdot_never_matches() -> None:
    assert not path_matches("x.md", ["daily/../"])
    assert path_matches("daily/x.md", ["./daily/"])


def test_may_contain() -> None:
    assert may_contain("", ["digest/wiki/*.md"])
    assert may_contain("digest", ["digest/wiki/*.md"])
    assert may_contain("digest/wiki", ["digest/wiki/*.md"])
    assert not may_contain("daily", ["digest/wiki/*.md"])
    assert not may_contain("", [])


def test_iter_files(paths: WorkspacePaths, tmp_path: Path) -> None:
    root = paths.root
    for rel in ["daily/a.md", "b.txt", ".hidden/c.md", ".reme/d.md", "skip/e.md", "f.bin"]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "o.md").write_text("x")
    os.symlink(outside, root / "escape")
    os.symlink(outside / "o.md", root / "escape.md")
    os.symlink(root / "daily", root / "alias")  # would list daily/a.md twice
    os.symlink(root / "b.txt", root / "b-link.txt")
    found = list(paths.iter_files(suffixes=[".md", ".txt"], exclude_globs=["skip/**"]))
    assert found == ["b-link.txt", "b.txt", "daily/a.md"]
    assert "f.bin" in list(paths.iter_files())


EXCLUDES = [
    [],
    [".reme/**", ".git/**", ".obsidian/**", "**/.*", "tool_results/**"],
    ["daily", "notes/keep/drop.md", "*.txt", "**/draft-*", "notes/k?ep/**/x*.md", "deep/a/"],
    [""],
]


@pytest.mark.parametrize("exclude", EXCLUDES)
def test_file_stats_lists_what_iter_files_lists(
    paths: WorkspacePaths, tmp_path: Path, exclude: list[str]
) -> None:
    """The index pass's listing (a stack walk that asks the excludes only in folders where one
    may match) agrees with ``iter_files`` file for file, sorted by path, with each file's stat."""
    root = paths.root
    for rel in [
        "daily/a.md",
        "daily/sub/b.md",
        "b.txt",
        "top.md",
        "a-b.md",
        "a/z.md",
        ".hidden/c.md",
        "notes/.dot.md",
        "notes/keep/drop.md",
        "notes/keep/stay.md",
        "notes/keep/deeper/x1.md",
        "notes/keep/deeper/y1.md",
        "notes/draft-1.md",
        "notes/keep/draft-2.md",
        "tool_results/r.md",
        "deep/a/b/c.md",
        "deep/ab.md",
        "f.bin",
    ]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "o.md").write_text("x")
    os.symlink(outside, root / "escape")
    os.symlink(outside / "o.md", root / "escape.md")
    os.symlink(root / "daily", root / "alias")
    os.symlink(root / "b.txt", root / "b-link.txt")
    os.symlink(root / "gone.md", root / "dangling.md")
    for suffixes in ([".md", ".txt"], None):
        listed = sorted(paths.iter_files(suffixes=suffixes, exclude_globs=exclude))
        found = paths.file_stats(suffixes=suffixes, exclude_globs=exclude)
        assert list(found) == listed
        for rel, st in found.items():
            assert st is not None and st == (root / rel).stat(), rel
    if exclude == EXCLUDES[2]:
        assert "notes/keep/stay.md" in listed and "notes/keep/drop.md" not in listed
        assert "notes/keep/deeper/y1.md" in listed and "notes/keep/deeper/x1.md" not in listed
        assert not any("draft-" in rel for rel in listed)
        assert "deep/ab.md" in listed and "deep/a/b/c.md" not in listed
    if exclude == [""]:
        assert listed == []
