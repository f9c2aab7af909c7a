"""The host-install cache is safe for several checkouts and runs at once: a second build of the
same folder waits for the first and uses its install; an install of a checkout is that
checkout's alone; an interrupted build is rebuilt (issue 23). Nothing is installed here."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integrations import host_cache, pip_hosts

ROOT = Path(__file__).resolve().parents[2]
DEADLINE_S = 30.0

# One process wanting the install: its build logs its pid, then waits for the gate file.
BUILDER = """
import os, sys, time
from pathlib import Path
from tests.integrations import host_cache

folder, log, gate = map(Path, sys.argv[1:4])

def build(into):
    with log.open("a") as out:
        out.write(f"{os.getpid()}\\n")
    deadline = time.monotonic() + 60
    while not gate.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    (into / "payload").write_text(f"built by {os.getpid()}")

host_cache.ensure(folder, "stamp-1", build)
print((folder / "payload").read_text())
"""


def _builder(folder: Path, log: Path, gate: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", BUILDER, str(folder), str(log), str(gate)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _until(done, what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not done():
        assert time.monotonic() < deadline, f"gave up waiting: {what}"
        time.sleep(0.02)


def _waiting_on(lock: Path) -> bool:
    """Whether some process is blocked on ``lock`` (a ``->`` line of /proc/locks)."""
    inode = f":{lock.stat().st_ino} "
    return any(
        inode in line and "->" in line for line in Path("/proc/locks").read_text().split("\n")
    )


@pytest.mark.skipif(not Path("/proc/locks").is_file(), reason="needs Linux's /proc/locks")
def test_a_second_build_waits_for_the_first_and_uses_its_install(tmp_path: Path) -> None:
    folder, log, gate = tmp_path / "hosts" / "host-1.0", tmp_path / "builds.log", tmp_path / "go"
    first = _builder(folder, log, gate)
    try:
        _until(lambda: log.is_file() and log.read_text().strip(), "the first build to start")
        second = _builder(folder, log, gate)
        try:
            lock = folder.parent / "host-1.0.lock"
            _until(lambda: _waiting_on(lock), "the second process to wait on the build lock")
            assert not (folder / host_cache.STAMP).exists()
            gate.touch()
            out_first, err_first = first.communicate(timeout=DEADLINE_S)
            out_second, err_second = second.communicate(timeout=DEADLINE_S)
        finally:
            second.kill()
    finally:
        gate.touch()
        first.kill()
    assert first.returncode == 0, err_first
    assert second.returncode == 0, err_second
    builders = log.read_text().split()
    assert builders == [str(first.pid)]  # one build, by the first
    assert out_first == out_second == f"built by {first.pid}\n"
    assert (folder / host_cache.STAMP).read_text() == "stamp-1"


def test_a_failed_build_leaves_no_stamp_and_a_new_stamp_rebuilds(tmp_path: Path) -> None:
    folder = tmp_path / "host-1.0"
    calls: list[list[str]] = []

    def failing(into: Path) -> None:
        (into / "half").write_text("x")
        raise RuntimeError("network down")

    def build(into: Path) -> None:
        calls.append(sorted(p.name for p in into.iterdir()))
        (into / "payload").write_text("x")

    with pytest.raises(RuntimeError, match="network down"):
        host_cache.ensure(folder, "a", failing)
    assert not host_cache.is_built(folder, "a")
    assert host_cache.ensure(folder, "a", build) == folder
    assert host_cache.ensure(folder, "a", build) == folder  # built: not again
    host_cache.ensure(folder, "b", build)  # what it should hold changed
    assert calls == [[], []]  # each build starts from an empty folder
    assert host_cache.is_built(folder, "b") and not host_cache.is_built(folder, "a")


def test_a_venv_of_editable_projects_is_its_checkouts_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    hosts_dir = tmp_path / "cache" / "reme" / "hosts"
    one, other = tmp_path / "one", tmp_path / "other"
    mine = pip_hosts.venv_folder("hermes", "1.0", [one, one / "integrations" / "hermes"])
    theirs = pip_hosts.venv_folder("hermes", "1.0", [other, other / "integrations" / "hermes"])
    assert mine.parent == theirs.parent == hosts_dir
    assert mine != theirs and mine.name.startswith("hermes-1.0-")
    assert mine == pip_hosts.venv_folder("hermes", "1.0", [one, one / "integrations" / "hermes"])
    # No editable project: the venv holds only PyPI packages, shared by every checkout.
    assert pip_hosts.venv_folder("qwenpaw", "2.0", []) == hosts_dir / "qwenpaw-2.0"
    # What it holds is named by the files' contents, wherever the checkout is.
    for checkout in (one, other):
        checkout.mkdir()
        (checkout / "requirements.txt").write_text("qwenpaw==2.0\n")
    stamps = {pip_hosts._stamp([c / "requirements.txt"]) for c in (one, other)}
    assert len(stamps) == 1
    (other / "requirements.txt").write_text("qwenpaw==2.1\n")
    assert pip_hosts._stamp([other / "requirements.txt"]) not in stamps
