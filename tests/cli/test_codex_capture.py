"""`reme codex capture`: the notify program's call by hand, for named sessions or every rollout
under $CODEX_HOME; incremental, so a rerun captures nothing twice."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from reme_core.cli import cli

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "auto_memory" / "codex"
SID = "01a23d2d-20d8-78d3-af70-63f1e6350dbe"
DAY = "sessions/2026/12/03"
OTHER = "0c0ffee0-1111-4222-8333-444455556666"


@pytest.fixture
def codex(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "codex"
    shutil.copytree(EXAMPLE, folder)
    rollout = folder / DAY / f"rollout-2026-12-03T18-31-37-{SID}.jsonl"
    other = rollout.with_name(f"rollout-2026-12-03T19-00-00-{OTHER}.jsonl")
    unknown = {"timestamp": "2026-12-03T19:00:00Z", "type": "conversation_v9", "payload": {}}
    other.write_text(rollout.read_text("utf-8") + json.dumps(unknown) + "\n", "utf-8")
    monkeypatch.setenv("CODEX_HOME", str(folder))
    monkeypatch.setenv("REME_TIMEZONE", "UTC")
    return folder


def run(*args: str) -> Result:
    result = CliRunner().invoke(cli, list(args))
    assert "Traceback" not in result.output, result.output
    return result


def test_all_sessions_are_captured_once(codex: Path, root: Path):
    result = run("codex", "capture", "--all", "-w", str(root), "--json")
    assert result.exit_code == 0, result.output
    rows = {row["session_id"]: row for row in json.loads(result.output)}
    assert set(rows) == {SID, OTHER}
    assert rows[SID]["status"] == "unsummarised" and rows[SID]["added"] == 4
    assert rows[SID]["note"].startswith("daily/2026-12-03/") and "unknown_lines" not in rows[SID]
    assert "type 'conversation_v9'" in rows[OTHER]["unknown_lines"]["reason"]
    assert (root / "sessions" / f"{OTHER}.jsonl").is_file()
    again = run("codex", "capture", "--all", "-w", str(root))
    assert again.exit_code == 0, again.output
    assert f"{SID}  unchanged" in again.output and "(+" not in again.output
    assert "1 line(s) in a format this reme does not know" in again.output


def test_a_missing_session_fails_and_the_others_still_run(codex: Path, root: Path):
    result = run("codex", "capture", "nope-123", SID, "-w", str(root), "--json")
    assert result.exit_code == 1
    rows = json.loads(result.stdout)
    assert rows[0]["status"] == "failed" and "no Codex rollout" in rows[0]["error"]
    assert rows[1]["session_id"] == SID and rows[1]["added"] == 4


def test_sessions_or_all_must_be_given(root: Path):
    result = run("codex", "capture", "-w", str(root))
    assert result.exit_code == 2 and "name THREAD_IDs, or --all" in result.output
