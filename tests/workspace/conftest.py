from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from reme_core.workspace import FileTools, Journal, find_state_dir


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every file and folder under ``root`` (hidden and .reme/ included), with file bytes."""
    out: dict[str, bytes | None] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs:
            out[os.path.relpath(os.path.join(folder, name), root)] = None
        for name in files:
            path = os.path.join(folder, name)
            out[os.path.relpath(path, root)] = (
                None if os.path.islink(path) else Path(path).read_bytes()
            )
    return out


@pytest.fixture
def workspace(root: Path) -> Path:
    return root


@pytest.fixture
def changes() -> list[tuple[list[str], list[str]]]:
    return []


@pytest.fixture
def tools(workspace: Path, changes: list[tuple[list[str], list[str]]]) -> FileTools:
    journal = Journal(find_state_dir(workspace))
    return FileTools(
        workspace, journal=journal, on_change=lambda c, r: changes.append((list(c), list(r)))
    )


Refusal = Callable[..., None]


@pytest.fixture
def assert_refused() -> Refusal:
    """Check that a call raises ``error`` and leaves every byte under the folder unchanged."""

    def check(
        root: Path, call: Callable[[], object], error: type[Exception], match: str | None = None
    ) -> None:
        # The parent holds the workspace and the "outside" folder a symlink escape would reach.
        before = snapshot(root.parent)
        with pytest.raises(error, match=match):
            call()
        assert snapshot(root.parent) == before

    return check
