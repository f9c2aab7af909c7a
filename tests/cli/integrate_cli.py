"""What the `reme integrate HOST` tests share: a workspace as `reme serve` leaves it, the CLI run
in-process, and snapshots of a host's files and of the workspace's tokens."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner, Result

from reme_core.cli import cli
from reme_core.server.auth import TokenStore


def served_workspace(tmp_path: Path) -> Path:
    """A new workspace in ``tmp_path / "ws"`` with the local admin token `reme serve` makes on
    its first start."""
    root = tmp_path / "ws"
    assert run("init", str(root)).exit_code == 0
    TokenStore(root / ".reme").ensure_local_token()
    return root


def run(*args: str) -> Result:
    result = CliRunner().invoke(cli, list(args))
    assert "Traceback" not in result.output, result.output
    return result


def integrate(host: str, workspace: Path, *args: str) -> dict:
    """``reme integrate HOST -w WORKSPACE --json ARGS``'s report; the command must succeed."""
    result = run("integrate", host, "-w", str(workspace), "--json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` and its bytes."""
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def tokens(workspace: Path) -> dict[str, str]:
    """The workspace's tokens: id to profile."""
    return {t.id: t.profile for t in TokenStore(workspace / ".reme").list_tokens()}


def listed(workspace: Path, host: str) -> dict:
    """``reme integrate --list --json``'s row for ``host``."""
    result = run("integrate", "--list", "-w", str(workspace), "--json")
    assert result.exit_code == 0, result.output
    (row,) = [r for r in json.loads(result.output) if r["host"] == host]
    return row


def list_line(workspace: Path, host: str) -> str:
    """``reme integrate --list``'s line for ``host``."""
    lines = run("integrate", "--list", "-w", str(workspace)).output.splitlines()
    (line,) = [line for line in lines if line.split()[0] == host]
    return line
