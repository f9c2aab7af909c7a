from __future__ import annotations

from pathlib import Path

from reme_core.workspace import find_state_dir, init_workspace


def test_init_creates_layout_and_is_idempotent(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    created = init_workspace(root)
    for folder in ["daily", "digest/personal", "digest/procedure", "digest/wiki", "resource"]:
        assert (root / folder).is_dir()
    assert (root / "sessions").is_dir() and find_state_dir(root) == root / ".reme"
    assert find_state_dir(root).is_dir()
    assert ".gitignore" in created and "daily/" in created
    assert (root / ".gitignore").read_text() == ".reme/\n"
    assert init_workspace(root) == []


def test_existing_gitignore_gets_line_appended_once(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("*.pyc")
    (tmp_path / "daily").mkdir()
    created = init_workspace(tmp_path)
    assert "daily/" not in created and ".gitignore" in created
    assert (tmp_path / ".gitignore").read_text() == "*.pyc\n.reme/\n"
    init_workspace(tmp_path)
    assert (tmp_path / ".gitignore").read_text() == "*.pyc\n.reme/\n"


def test_gitignore_already_listing_reme_is_untouched(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("/.reme\n")
    assert ".gitignore" not in init_workspace(tmp_path)
    assert (tmp_path / ".gitignore").read_text() == "/.reme\n"
