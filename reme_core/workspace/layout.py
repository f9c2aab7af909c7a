"""The workspace skeleton: the folders every pipeline expects (never pruned when a removal leaves
them empty), and .reme/ kept out of git."""

from __future__ import annotations

import os
from pathlib import Path

from reme_core.workspace.atomic import atomic_write, fsync_dir

STATE_DIR_NAME = ".reme"
FOLDERS: tuple[str, ...] = (
    "daily",
    "digest/personal",
    "digest/procedure",
    "digest/wiki",
    "resource/inbox",
    "sessions",
    STATE_DIR_NAME,
)
_IGNORE_LINE = ".reme/"
_IGNORE_FORMS = {".reme", ".reme/", "/.reme", "/.reme/", ".reme/*", "/.reme/*", ".reme/**"}


def find_state_dir(root: Path) -> Path:
    """The folder holding derived state for the workspace at ``root``."""
    return Path(root) / STATE_DIR_NAME


def init_workspace(root: Path) -> list[str]:
    """Create the standard folders and ignore .reme/ in git; returns what it created or changed."""
    root = Path(root)
    created: list[str] = []
    if not root.exists():
        root.mkdir(parents=True)
    for folder in FOLDERS:
        path = root / folder
        if not path.is_dir():
            path.mkdir(parents=True, exist_ok=True)
            created.append(folder + "/")
    gitignore = root / ".gitignore"
    if not gitignore.exists():
        atomic_write(gitignore, f"{_IGNORE_LINE}\n".encode())
        created.append(".gitignore")
    else:
        text = gitignore.read_text(encoding="utf-8")
        if not any(line.strip() in _IGNORE_FORMS for line in text.splitlines()):
            prefix = "" if text == "" or text.endswith("\n") else "\n"
            atomic_write(gitignore, f"{text}{prefix}{_IGNORE_LINE}\n".encode())
            created.append(".gitignore")
    return created


def prune_empty_folders(root: Path, rel: str) -> list[str]:
    """Remove the folders above ``rel`` (a file just deleted or moved away) that it left empty,
    deepest first, stopping at the first one still holding anything and never removing the
    workspace's own skeleton (``FOLDERS`` and their parents). Returns what it removed."""
    kept = {""} | {
        "/".join(f.split("/")[: i + 1]) for f in FOLDERS for i in range(f.count("/") + 1)
    }
    removed: list[str] = []
    folder = os.path.dirname(rel)
    while folder not in kept:
        try:
            os.rmdir(root / folder)  # refuses a folder that is not empty: that is the stop
        except OSError:
            break
        removed.append(folder)
        folder = os.path.dirname(folder)
    if removed:
        fsync_dir(root / folder if folder else root)
    return removed
