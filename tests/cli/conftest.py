"""Fixtures of the CLI tests."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture
def fake_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty HOME in ``tmp_path / "home"``, ``tmp_path`` the current folder and no
    connection variables set: what `reme integrate HOST` writes for a user lands here."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("REME_TOKEN", "REME_WORKSPACE", "REME_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return home


HOST_PROGRAMS = ("claude", "codex", "openclaw", "hermes")
"""The programs `reme integrate --list` looks for on PATH."""


@pytest.fixture
def host_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[str], Path]:
    """PATH without any host program (this machine's own are dropped from it), and a function
    that puts a fake executable of that name on it: the host is then "on this machine"."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    kept = [
        d
        for d in os.environ.get("PATH", "").split(os.pathsep)
        if d and not any(shutil.which(p, path=d) for p in HOST_PROGRAMS)
    ]
    monkeypatch.setenv("PATH", os.pathsep.join([str(bin_dir), *kept]))

    def install(program: str) -> Path:
        fake = bin_dir / program
        fake.write_text("#!/bin/sh\nexit 0\n", "utf-8")
        fake.chmod(0o755)
        return fake

    return install
