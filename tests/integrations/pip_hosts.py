"""What the real-host tests of Python hosts share: the pinned host installed with pip into a venv
in the cache, with packages of this checkout installed editable beside it.

A host from PyPI (AgentScope, Hermes) pins itself in ``integrations/<host>/requirements.txt``;
``pip_venv`` installs it into ``$XDG_CACHE_HOME/reme/hosts/<name>-<version>`` (else
``~/.cache/...``; see ``host_cache``), then reme and the integration editable, always under the
constraint ``torch==2.13.0`` (the CPU build on disk: nothing may pull a CUDA torch) and a
``constraints.txt`` beside the requirements where there is one. A venv holding editable projects
imports that checkout's code, so its folder is named after the checkout too (``venv_folder``).
The venv is rebuilt only when the requirements, the constraints or an editable project's
``pyproject.toml`` change. Where PyPI cannot be reached the test is skipped, unless
REME_REQUIRE_HOSTS=1 (CI), where it fails; any other install failure fails.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.integrations import host_cache

INSTALL_TIMEOUT_S = 1200
TORCH = "torch==2.13.0"
OFFLINE = re.compile(
    r"NewConnectionError|Failed to establish a new connection|Temporary failure in name "
    r"resolution|Name or service not known|Network is unreachable|ConnectTimeoutError|"
    r"No matching distribution found"
)


def pinned(requirements: Path, package: str) -> str:
    """The version ``requirements`` pins ``package`` to (``package==VERSION``)."""
    for line in requirements.read_text(encoding="utf-8").splitlines():
        name, _, version = line.split("#", 1)[0].strip().partition("==")
        if name.strip().lower() == package.lower() and version.strip():
            return version.strip()
    raise AssertionError(f"{requirements} pins no {package}==VERSION")


def _stamp(files: Sequence[Path]) -> str:
    """What the venv holds, from the named files' contents (not where they are)."""
    digest = hashlib.sha256(TORCH.encode())
    for path in files:
        if path.is_file():
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def venv_folder(name: str, version: str, editable: Sequence[Path]) -> Path:
    """``<cache>/reme/hosts/<name>-<version>``, plus ``-<checkout_key>`` when projects of a
    checkout are installed editable (the venv then imports that checkout's code)."""
    suffix = f"-{host_cache.checkout_key(editable)}" if editable else ""
    return host_cache.cache_root() / f"{name}-{version}{suffix}"


def _pip(venv: Path, args: list[str]) -> None:
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *args],
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT_S,
    )
    if done.returncode == 0:
        return  # pip's "dependency resolver does not take into account" lines are warnings
    output = "\n".join(
        line for line in (done.stdout + done.stderr).splitlines() if "is ignored" not in line
    )
    shutil.rmtree(venv, ignore_errors=True)
    if OFFLINE.search(output) and os.environ.get("REME_REQUIRE_HOSTS") != "1":
        pytest.skip(f"cannot install from PyPI (offline?): {output[-500:]}")
    pytest.fail(f"pip install {' '.join(args)} failed:\n{output[-4000:]}")


def pip_venv(name: str, version: str, requirements: Path, editable: Sequence[Path]) -> Path:
    """The python of ``venv_folder(...)``: ``requirements`` installed, then the ``editable``
    project folders of this checkout (``pip install -e``); built once (``host_cache.ensure``)."""
    extra = requirements.parent / "constraints.txt"
    stamp = _stamp([requirements, extra, *(p / "pyproject.toml" for p in editable)])

    def build(venv: Path) -> None:
        made = subprocess.run(
            [sys.executable, "-m", "venv", str(venv)], capture_output=True, text=True, timeout=300
        )
        assert made.returncode == 0, f"python -m venv failed:\n{made.stdout}\n{made.stderr}"
        constraints = venv / "constraints.txt"
        constraints.write_text(TORCH + "\n", encoding="utf-8")
        limits = ["-c", str(constraints)] + (["-c", str(extra)] if extra.is_file() else [])
        _pip(venv, ["-r", str(requirements), *limits])
        # The checkout's projects after the host, in one call: where one of them pins a
        # dependency differently from the host (reme's croniter 7 against Hermes' 6), pip
        # installs ours and warns; the host tests show the host still runs.
        if editable:  # a host reached over HTTP only (QwenPaw) needs none of this checkout
            _pip(venv, [*limits, *(a for p in editable for a in ("-e", str(p)))])

    venv = host_cache.ensure(venv_folder(name, version, editable), stamp, build)
    return venv / "bin" / "python"
