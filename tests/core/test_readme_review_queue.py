"""The README's review-queue walkthrough does what its comments say, not only exit 0:
``test_readme_block_runs`` runs every block, this checks the workspace the block leaves."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from core.test_readme_commands import (
    README,
    make_terminal,
    parse_readme,
    run_shell_command,
    shell_commands,
)
from reme_core.workspace.notes import parse_note

MARK = "examples/review/tags.json}}"
"""A line only the walkthrough block holds: its scripted model."""


@pytest.mark.slow
def test_the_review_walkthrough_approves_one_proposal_and_rejects_the_other(tmp_path: Path):
    blocks, _ = parse_readme(README.read_text(encoding="utf-8"))
    [block] = [b for b in blocks if MARK in b.text]
    terminal = make_terminal(tmp_path, [block])
    try:
        for command in shell_commands(block):
            run_shell_command(terminal, command, keep_running=False)
    finally:
        terminal.close()

    memory = Path(terminal.env["HOME"]) / "memory"
    deploy, lunch = (
        parse_note(name, (memory / name).read_text(encoding="utf-8"))
        for name in ("digest/wiki/deploy.md", "digest/wiki/lunch.md")
    )
    assert deploy.frontmatter.get("tags") == ["deploy", "incident"]  # approved: written
    assert "tags" not in lunch.frontmatter  # rejected: never written
    listed = subprocess.run(
        [str(Path(sys.executable).parent / "reme"), "review", "list", "--status", "all", "--json"],
        env=terminal.env,
        cwd=terminal.cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    statuses = {p["target"]: p["status"] for p in json.loads(listed.stdout)["proposals"]}
    assert statuses == {"digest/wiki/deploy.md": "approved", "digest/wiki/lunch.md": "rejected"}
