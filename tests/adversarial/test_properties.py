"""Property tests (hypothesis) for path confinement and glob matching (issue 12)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reme_core.errors import WorkspaceError
from reme_core.workspace import FileTools, Journal, find_state_dir, init_workspace
from reme_core.workspace.globs import compile_glob
from reme_core.workspace.paths import WorkspacePaths, is_internal

SECRET = "secret-canary-9b1e"


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, FileTools]:
    base = tmp_path_factory.mktemp("props")
    root = base / "ws"
    root.mkdir()
    init_workspace(root)
    (base / "outside").mkdir()
    (base / "outside" / "a.md").write_text(SECRET)
    (root / ".reme" / "token").write_text(SECRET)
    (root / ".git").mkdir()
    (root / ".git" / "a.md").write_text(SECRET)
    (root / "a").mkdir()
    (root / "a" / "a.md").write_text("# fine\n")
    os.symlink("../.reme", root / "a" / "link")
    os.symlink("../../outside", root / "a" / "out")
    os.symlink("../.git/a.md", root / "a" / "g.md")
    os.link(base / "outside" / "a.md", root / "a" / "hard.md")
    return root, FileTools(root, journal=Journal(find_state_dir(root)))


SEGMENTS = ["a", "a.md", "..", ".", "", ".reme", ".git", "token", "link", "out", "g.md",
            "hard.md", "outside", "~", "\\", "\x00", "a\\..", "%2e%2e"]  # fmt: skip


@st.composite
def hostile_path(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=6))
    lead = draw(st.sampled_from(["", "/", "./", "\\"]))
    return lead + "/".join(parts)


@settings(max_examples=400, deadline=None)
@given(path=hostile_path())
def test_resolved_paths_stay_inside_and_out_of_internal_folders(
    tree: tuple[Path, FileTools], path: str
) -> None:
    root, _ = tree
    paths = WorkspacePaths(root)
    try:
        _, absolute = paths.resolve(path, for_write=True)
    except WorkspaceError:
        return
    real = Path(os.path.realpath(absolute))
    real_root = Path(os.path.realpath(root))
    assert real == real_root or real_root in real.parents
    assert not is_internal(real.relative_to(real_root).as_posix())


@settings(max_examples=400, deadline=None)
@given(path=hostile_path())
def test_no_tool_returns_a_byte_of_a_protected_file(
    tree: tuple[Path, FileTools], path: str
) -> None:
    _, tools = tree
    for call in (tools.read, tools.stat, tools.ls):
        try:
            answer = call(path)
        except WorkspaceError:
            continue
        assert SECRET not in answer.model_dump_json()


def reference_regex(pattern: str) -> re.Pattern[str]:
    """The former translation (backtracking, fine on tiny inputs): the behaviour to keep."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and (end := pattern.find("]", i + 2)) != -1:
            body = pattern[i + 1 : end]
            negate = body.startswith("!")
            out.append(f"(?![/])[{'^' if negate else ''}{re.escape(body.lstrip('!'))}]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


GLOB_TOKENS = ["a", "b", "/", "*", "**", "**/", "?", "[ab]", "[!a]", "."]


@settings(max_examples=600, deadline=None)
@given(
    pattern=st.lists(st.sampled_from(GLOB_TOKENS), max_size=7).map("".join),
    path=st.text(alphabet="ab/.", max_size=10),
)
def test_linear_glob_matches_like_the_regex(pattern: str, path: str) -> None:
    assert compile_glob(pattern).match(path) == bool(reference_regex(pattern).match(path))
