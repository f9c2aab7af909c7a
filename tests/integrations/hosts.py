"""What the real-host tests share: the pinned host installed with ``npm ci`` into a cache, a clean
environment, a one-note workspace and ``reme serve`` over it with a fresh token.

Each host test (test_claude_code_host.py, test_codex_host.py) pins its host in
``integrations/<host>/package.json`` + ``package-lock.json``. Without node and npm it is skipped,
unless REME_REQUIRE_HOSTS=1 (CI), where it fails.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from reme_core.workspace import init_workspace
from tests.integrations import host_cache

INSTALL_TIMEOUT_S = 600
START_TIMEOUT_S = 30


def reme_command() -> list[str]:
    script = Path(sys.executable).with_name("reme")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from reme_core.cli import main; main()"]


def clean_env(prefixes: tuple[str, ...], **extra: str) -> dict[str, str]:
    """This environment without REME_* and the host's own ``prefixes``, plus ``extra``."""
    dropped = ("REME_", *prefixes)
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    # Kept: where `reme integrate` finds this checkout's integrations/ (tests/conftest.py).
    if "REME_INTEGRATIONS_DIR" in os.environ:
        env["REME_INTEGRATIONS_DIR"] = os.environ["REME_INTEGRATIONS_DIR"]
    env.update(extra)
    return env


def pinned_version(folder: Path, package: str) -> str:
    manifest = json.loads((folder / "package.json").read_text(encoding="utf-8"))
    return manifest["devDependencies"][package]


def npm_install(
    folder: Path, package: str, name: str, env: Mapping[str, str] | None = None
) -> tuple[Path, str]:
    """``(install folder, version)`` of the host pinned in ``folder``, installed with ``npm ci``
    into ``$XDG_CACHE_HOME/reme/hosts/<name>-<version>`` (else ``~/.cache/...``; ``host_cache``);
    reinstalled only when the lock file changed. ``env``: npm's environment, when not this one (a PATH that puts a
    newer node first, for a host whose install scripts refuse this machine's)."""
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        reason = f"{' and '.join(missing)} not found: the real {name} host cannot be installed"
        if os.environ.get("REME_REQUIRE_HOSTS") == "1":
            pytest.fail(f"REME_REQUIRE_HOSTS=1 but {reason}")
        pytest.skip(reason)
    version = pinned_version(folder, package)
    lock = (folder / "package-lock.json").read_bytes()

    def install(home: Path) -> None:
        for file in ("package.json", "package-lock.json"):
            shutil.copy(folder / file, home / file)
        done = subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund", "--loglevel", "error"],
            cwd=home,
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT_S,
            env=None if env is None else dict(env),
        )
        assert done.returncode == 0, f"npm ci failed:\n{done.stdout}\n{done.stderr}"

    # The install is the lock file's alone (no path of this checkout in it): every checkout
    # with the same lock shares it.
    stamp = hashlib.sha256(lock).hexdigest()
    home = host_cache.ensure(host_cache.cache_root() / f"{name}-{version}", stamp, install)
    return home, version


def one_note_workspace(workspace: Path, fact: str) -> Path:
    """A new workspace whose only note, ``notes/kiln.md``, holds ``fact``."""
    init_workspace(workspace)
    note = workspace / "notes" / "kiln.md"
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text(f"# The kiln key\n\n{fact}\n", encoding="utf-8")
    return workspace


@contextmanager
def reme_served(
    workspace: Path, log_path: Path, env: Mapping[str, str], profile: str
) -> Iterator[tuple[dict[str, Any], str]]:
    """``reme serve`` over ``workspace`` on a free port, logging to ``log_path``: yields its
    discovery record (``url``, ``auth``, ...) and the secret of a new ``profile`` token."""
    created = subprocess.run(
        [*reme_command(), "token", "create", "--profile", profile, "--json", "-w", str(workspace)],
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert created.returncode == 0, created.stderr
    token = json.loads(created.stdout)["secret"]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [*reme_command(), "serve", "-w", str(workspace), "--port", "0", "--log-level", "info"],
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            discovery = workspace / ".reme" / "server.json"
            deadline = time.monotonic() + START_TIMEOUT_S
            while not discovery.is_file():
                output = log_path.read_text(errors="replace")
                assert proc.poll() is None, f"reme serve exited:\n{output}"
                assert time.monotonic() < deadline, f"reme serve did not start:\n{output}"
                time.sleep(0.05)
            yield json.loads(discovery.read_text(encoding="utf-8")), token
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


class Served(NamedTuple):
    """A running ``reme serve`` over a one-note workspace, and a token for the host."""

    url: str
    token: str
    workspace: Path
    log: Path


@contextmanager
def served_one_note(
    folder: Path, fact: str, env: Mapping[str, str], profile: str = "write"
) -> Iterator[Served]:
    """``reme serve`` over ``one_note_workspace(folder / "ws", fact)`` with a ``profile`` token;
    auth is checked to be on, so an answer from the host proves it sent the token."""
    workspace = one_note_workspace(folder / "ws", fact)
    log = folder / "server.log"
    with reme_served(workspace, log, env, profile) as (server, token):
        assert server["auth"] is True
        yield Served(server["url"], token, workspace, log)


def new_token(workspace: Path, env: Mapping[str, str], profile: str) -> str:
    """The secret of a new ``profile`` token for ``workspace`` (``reme token create``)."""
    created = subprocess.run(
        [*reme_command(), "token", "create", "--profile", profile, "--json", "-w", str(workspace)],
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert created.returncode == 0, created.stderr
    return json.loads(created.stdout)["secret"]


def free_port() -> int:
    """A port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def closed_port_url() -> str:
    """``http://127.0.0.1:PORT`` where nothing listens (``free_port``, its probe closed)."""
    return f"http://127.0.0.1:{free_port()}"


STALLED_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 99\r\n\r\n{"


@contextmanager
def silent_server(head: bool = False) -> Iterator[str]:
    """``http://127.0.0.1:PORT`` of a socket that accepts every connection, reads what it is sent
    and never answers (a server that hangs), closed on exit; with ``head``, it sends a response's
    headers and the first byte of its body, then nothing more (a server that stalls)."""
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.2)
    held: list[socket.socket] = []
    stop = threading.Event()

    def hold() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:  # the accept timeout, or the listener closed
                continue
            held.append(conn)  # kept open, never written to (beyond the head)
            if head:
                conn.sendall(STALLED_HEAD)

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=5)
        for conn in held:
            conn.close()
        listener.close()
