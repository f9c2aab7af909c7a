from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from conftest import copy_example

from reme_core.cli import cli


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def test_links_both_ways_and_unresolved(tmp_path: Path):
    workspace = tmp_path / "ws"
    copy_example(workspace)
    code, out = _run("links", "digest/procedure/deploy-process.md", "-w", str(workspace), "--json")
    assert code == 0, out
    data = json.loads(out)
    assert "digest/procedure/db-migrations.md" in {link["target"] for link in data["outbound"]}
    assert "daily/2026-11-02.md" in {link["source"] for link in data["inbound"]}

    code, out = _run("links", "--unresolved", "-w", str(workspace), "--json")
    assert code == 0, out
    unresolved = json.loads(out)["unresolved"]
    assert [(u["raw"], u["state"]) for u in unresolved] == [
        ("digest/wiki/load-balancer", "missing")
    ]


def test_links_needs_exactly_one_of_path_or_unresolved(tmp_path: Path):
    code, out = _run("links", "-w", str(tmp_path))
    assert code != 0
    assert "either a PATH or --unresolved" in out
