"""Issue 20, defect 12: delete and move remove the folders they leave empty, up to (never
including) the workspace's own skeleton."""

from __future__ import annotations

from pathlib import Path

from reme_core.workspace import FileTools
from reme_core.workspace.layout import FOLDERS, prune_empty_folders


def test_delete_removes_the_folders_it_empties(tools: FileTools, workspace: Path) -> None:
    tools.write("digest/wiki/team/alpha/plan.md", "# Plan\n")
    tools.delete("digest/wiki/team/alpha/plan.md")
    assert not (workspace / "digest/wiki/team").exists()
    assert (workspace / "digest/wiki").is_dir()  # the skeleton stays


def test_delete_stops_at_a_folder_still_holding_something(
    tools: FileTools, workspace: Path
) -> None:
    tools.write("digest/wiki/team/alpha/plan.md", "# Plan\n")
    tools.write("digest/wiki/team/roster.md", "# Roster\n")
    tools.delete("digest/wiki/team/alpha/plan.md")
    assert not (workspace / "digest/wiki/team/alpha").exists()
    assert (workspace / "digest/wiki/team/roster.md").is_file()


def test_move_removes_the_source_folders_it_empties(tools: FileTools, workspace: Path) -> None:
    tools.write("resource/inbox/2026/scan.md", "# Scan\n")
    tools.move("resource/inbox/2026/scan.md", "digest/wiki/archive/scan.md")
    assert not (workspace / "resource/inbox/2026").exists()
    assert (workspace / "resource/inbox").is_dir()
    assert (workspace / "digest/wiki/archive/scan.md").is_file()


def test_a_note_outside_the_skeleton_stops_at_the_root(tools: FileTools, workspace: Path) -> None:
    tools.write("projects/x/notes.md", "# X\n")
    tools.delete("projects/x/notes.md")
    assert not (workspace / "projects").exists()
    assert workspace.is_dir()


def test_the_skeleton_is_never_removed(workspace: Path) -> None:
    for folder in FOLDERS:
        if folder == ".reme":
            continue
        assert prune_empty_folders(workspace, f"{folder}/gone.md") == []
        assert (workspace / folder).is_dir(), folder
    (workspace / "resource/inbox").rmdir()  # resource/ is empty now, and still the skeleton's
    assert prune_empty_folders(workspace, "resource/inbox/gone.md") == []
    assert (workspace / "resource").is_dir()
