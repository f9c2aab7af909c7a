"""Symbolic and hard links, long paths and glob bombs (issue 12, defects 1, 2 and 7).

Policy: a symbolic link is followed for reading only when it lands inside the workspace,
outside ``.reme/`` and ``.git/``, and inside the call's allowed paths by its real location;
nothing is written, moved or deleted through a link; a file with more than one hard link is
refused by every tool and reported (not indexed) by the indexer.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from reme_core.errors import InvalidPathError, PathOutsideWorkspaceError, WorkspaceError
from reme_core.runtime import Reme
from reme_core.schema import SearchFilters
from reme_core.workspace import FileTools
from reme_core.workspace.globs import InvalidGlobError, compile_glob
from reme_core.workspace.paths import path_matches

SECRET = "admin-token-0123456789abcdef"


@pytest.fixture
def token_file(workspace: Path) -> Path:
    state = workspace / ".reme"
    state.mkdir(exist_ok=True)
    secret = state / "token"
    secret.write_text(SECRET + "\n")
    (workspace / "daily").mkdir(exist_ok=True)
    return secret


def _read_calls(tools: FileTools, path: str) -> list:
    return [
        lambda: tools.read(path),
        lambda: tools.stat(path),
        lambda: tools.ls(path),
    ]


def _write_calls(tools: FileTools, path: str) -> list:
    return [
        lambda: tools.write(path, "# replaced\n"),
        lambda: tools.edit(path, "admin", "user"),
        lambda: tools.update_frontmatter(path, {"name": "x"}),
        lambda: tools.move(path, "daily/moved.md"),
        lambda: tools.delete(path),
    ]


@pytest.mark.parametrize("target", [".reme/token", ".reme", ".git/config"])
def test_symlink_into_internal_folder_is_refused_by_every_tool(
    tools: FileTools, workspace: Path, token_file: Path, assert_refused, target: str
) -> None:
    (workspace / ".git").mkdir(exist_ok=True)
    (workspace / ".git/config").write_text(SECRET)
    link = workspace / "daily" / "token-link.md"
    os.symlink(os.path.relpath(workspace / target, link.parent), link)
    for call in [
        *_read_calls(tools, "daily/token-link.md"),
        *_write_calls(tools, "daily/token-link.md"),
    ]:
        assert_refused(workspace, call, PathOutsideWorkspaceError)
    # A folder link into .reme/ exposes nothing below it either.
    os.symlink(os.path.relpath(workspace / ".reme", workspace / "daily"), workspace / "daily/st")
    assert_refused(workspace, lambda: tools.read("daily/st/token"), PathOutsideWorkspaceError)
    assert_refused(workspace, lambda: tools.ls("daily/st"), PathOutsideWorkspaceError)
    listed = tools.ls("daily", recursive=True)
    assert {entry.path for entry in listed.entries}.isdisjoint({"daily/st", "daily/token-link.md"})


def test_writes_never_go_through_a_link_inside_the_workspace(
    tools: FileTools, workspace: Path, assert_refused
) -> None:
    (workspace / "digest").mkdir(exist_ok=True)
    (workspace / "digest/real.md").write_text("# Real\nadmin\n")
    os.symlink("real.md", workspace / "digest/alias.md")
    os.symlink("digest", workspace / "linked")
    assert tools.read("digest/alias.md").content == "# Real\nadmin\n"  # reading follows it
    for call in [
        *_write_calls(tools, "digest/alias.md"),
        lambda: tools.write("linked/new.md", "# new\n"),
        lambda: tools.move("digest/real.md", "linked/moved.md"),
    ]:
        assert_refused(workspace, call, PathOutsideWorkspaceError, match="symbolic link")
    assert os.path.islink(workspace / "digest/alias.md")


def test_confinement_checks_the_real_location(tools: FileTools, workspace: Path) -> None:
    (workspace / "digest").mkdir(exist_ok=True)
    (workspace / "daily").mkdir(exist_ok=True)
    (workspace / "digest/private.md").write_text("# Private\n")
    os.symlink("../digest/private.md", workspace / "daily/peek.md")
    confined = tools.confined(["daily/"])
    with pytest.raises(PathOutsideWorkspaceError, match="allowed"):
        confined.read("daily/peek.md")


def test_hard_link_is_refused(
    tools: FileTools, workspace: Path, token_file: Path, assert_refused
) -> None:
    os.link(token_file, workspace / "daily/hard.md")
    for call in [*_read_calls(tools, "daily/hard.md")[:2], *_write_calls(tools, "daily/hard.md")]:
        assert_refused(workspace, call, PathOutsideWorkspaceError, match="hard link")


def test_indexer_never_reads_links_into_reme_or_hard_links(
    workspace: Path, token_file: Path
) -> None:
    (workspace / "daily/ok.md").write_text("# Ok\nadmin token rotation\n")
    os.symlink("../.reme/token", workspace / "daily/token-link.md")
    os.link(token_file, workspace / "daily/hard.md")
    with Reme.open(workspace, overrides=["components.embedding=null"]) as reme:
        reme.index()
        hits = reme.search(SECRET).hits + reme.search("admin").hits
        assert {hit.path for hit in hits} <= {"daily/ok.md"}
        assert all(SECRET not in hit.text for hit in hits)
        problems = reme.status()["problems"]
        assert "daily/hard.md" in problems and "hard link" in problems["daily/hard.md"]
        # Written after opening: the update path (API writes, watcher events) refuses it too.
        os.symlink("../.reme/token", workspace / "daily/later.md")
        reme.indexer.update(["daily/later.md"])
        later = reme.search(SECRET).hits
        assert all(SECRET not in hit.text and hit.path != "daily/later.md" for hit in later)


@pytest.mark.parametrize(
    "path",
    ["a/" * 3000 + "x.md", "daily/" + "n" * 300 + ".md", "x" * 5000],
)
def test_very_long_paths_are_a_clear_error(
    tools: FileTools, workspace: Path, assert_refused, path: str
) -> None:
    for call in [
        *_read_calls(tools, path),
        *_write_calls(tools, path),
        lambda: tools.move("daily/a.md", path),
    ]:
        assert_refused(workspace, call, InvalidPathError, match="limit")


GLOB_BOMBS = [
    "**?**?**?**?**?**?**?**?**Z",
    "*a*a*a*a*a*a*a*a*a*a*a*a*b",
    "**/**/**/**/**/**/**/**/**/**/x",
    "[a-z]*[a-z]*[a-z]*[a-z]*[a-z]*[a-z]*[a-z]*Q",
]


@pytest.mark.parametrize("pattern", GLOB_BOMBS)
def test_glob_bombs_match_in_linear_time(pattern: str) -> None:
    # The old regex translation took 79 s on the first; a linear matcher needs milliseconds.
    # Not a timing assertion: a generous ceiling that only a backtracking matcher would reach.
    path = "daily/" + "a" * 60 + "/" + "a" * 120 + ".md"
    started = time.process_time()
    assert not path_matches(path, [pattern])
    assert time.process_time() - started < 5


def test_glob_limits_are_a_clear_error() -> None:
    with pytest.raises(InvalidGlobError, match="wildcards"):
        compile_glob("*?" * 40)
    with pytest.raises(InvalidGlobError, match="character limit"):
        compile_glob("a" * 600)
    with pytest.raises(ValueError, match="wildcards"):
        SearchFilters(paths=["**?" * 20])
    with pytest.raises(ValueError):
        SearchFilters(paths=["daily/"] * 100)


def test_search_with_glob_bomb_is_refused_by_cli(workspace: Path) -> None:
    from click.testing import CliRunner

    from reme_core.cli import cli

    result = CliRunner().invoke(
        cli,
        ["search", "deploy", "-w", str(workspace), "--path", "**?" * 20, "--no-sync", "--json"],
    )
    assert result.exit_code != 0
    assert "wildcards" in result.output


def test_long_path_error_is_a_workspace_error() -> None:
    # HTTP maps it to 422 (http_status), the CLI to one line: never a traceback or a 500.
    assert issubclass(InvalidPathError, WorkspaceError)
    assert InvalidPathError.http_status == 422
