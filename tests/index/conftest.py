"""Fixtures of the index tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import copy_example


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A fresh copy of the example workspace, not indexed yet."""
    return copy_example(tmp_path / "ws")
