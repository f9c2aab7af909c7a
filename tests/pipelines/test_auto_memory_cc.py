"""auto_memory_cc: a Claude Code transcript, read incrementally by session id, becomes a note."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from reme_core.errors import NotFoundError
from reme_core.pipelines.engine import PipelineError
from reme_core.runtime import Reme
from reme_core.workspace import parse_frontmatter
from reme_core.workspace.wikilinks import LinkResolver
from reme_plugins.auto_memory.claude_code import clean_text, find_session_file, to_message
from tests.fake_llm import plugins_with

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "auto_memory" / "claude"
SID = "7b1f3c2a-5d4e-4f60-9a8b-0c1d2e3f4a5b"
PROJECT = "projects/-home-mira-larkspur"

NOTE = {
    "trivial": False,
    "name": "Larkspur crash loop",
    "description": "orjson was missing from the lock file.",
    "summary": "The v0.9.3 deploy crash-looped; v0.9.4 fixed it.",
    "facts": [
        {
            "text": "orjson was not installed.",
            "quote": "ModuleNotFoundError: No module named 'orjson'",
            "lines": [3],
        }
    ],
    "timeline": [{"line": 1, "text": "prod down"}],
}


@pytest.fixture
def claude(tmp_path: Path) -> Path:
    folder = tmp_path / "claude"
    shutil.copytree(EXAMPLE, folder)
    return folder


@pytest.fixture
def transcript(claude: Path) -> Path:
    return claude / PROJECT / f"{SID}.jsonl"


@pytest.fixture
def open_ws(open_reme: Callable[..., Reme], claude: Path) -> Callable[..., Reme]:
    plugins = plugins_with()

    def open_(script: list[Any] | None = None, claude_dir: Path | None = claude) -> Reme:
        setting = f", settings: {{claude_dir: '{claude_dir}'}}" if claude_dir else ""
        steps = f"[{{name: claude_code_transcript{setting}}}, {{name: auto_memory}}]"
        return open_reme(plugins, [f"pipelines.auto_memory_cc.steps={steps}"], script, "scripted")

    return open_


def saved(reme: Reme) -> list[dict[str, Any]]:
    text = (reme.root / f"sessions/{SID}.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def append(path: Path, *lines: dict[str, Any] | str) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        for line in lines:
            fh.write(line if isinstance(line, str) else json.dumps(line) + "\n")


def cc_line(uuid: str, role: str, content: Any, **extra: Any) -> dict[str, Any]:
    return {
        "parentUuid": None,
        "isSidechain": False,
        "type": role,
        "sessionId": SID,
        "cwd": "/home/mira/larkspur",
        "message": {"role": role, "content": content},
        "uuid": uuid,
        "timestamp": "2026-11-02T17:05:00.000Z",
        **extra,
    }


def test_only_what_the_user_and_assistant_said_is_kept(open_ws, transcript: Path):
    reme = open_ws([NOTE])
    result = reme.run("auto_memory_cc", {"session_id": SID})
    turns = saved(reme)
    assert [(t["role"], t["id"][:2]) for t in turns] == [
        ("user", "e1"),
        ("assistant", "a1"),
        ("assistant", "a1"),
        ("user", "e1"),
        ("assistant", "a1"),
    ]
    text = "\n".join(t["content"] for t in turns)
    for noise in ("system-reminder", "IDE", "command-name", "/clear", "Caveat", "journalctl -u"):
        assert noise not in text  # injected tags, slash commands, tool calls
    assert "The user wants logs" not in text  # thinking
    assert "Start request repeated" not in text  # a tool result
    assert turns[3]["content"] == "ok regenerate the lock with pip-compile and tag v0.9.4"
    assert turns[0]["timestamp"] == "2026-11-02T16:41:10.500000+00:00"
    out = result.outputs
    assert out["status"] == "written" and out["hint"] == (
        "A Claude Code session in /home/mira/larkspur"
    )
    front, _ = parse_frontmatter((reme.root / out["note"]).read_text(encoding="utf-8"))
    assert front["session_id"] == SID
    # The source link resolves to a file in the workspace, not to ~/.claude.
    target = front["source"].strip("[]")
    resolved = LinkResolver(reme.paths.iter_files()).resolve(target)
    assert resolved == ("resolved", f"sessions/{SID}.jsonl")
    assert (reme.root / target).is_file()


def test_reading_is_incremental_and_waits_for_a_partial_line(open_ws, transcript: Path):
    reme = open_ws([NOTE, *[{**NOTE, "facts": [], "timeline": []}] * 2])
    reme.run("auto_memory_cc", {"session_id": SID})
    # The lines the first run read are confirmed (saved) by this one; nothing new.
    first = reme.run("auto_memory_cc", {"session_id": SID}).outputs
    assert first["messages"] == [] and first["status"] == "unchanged"
    size = transcript.stat().st_size
    new = cc_line("e2000000-0000-4000-8000-000000000001", "user", "also check staging")
    half = json.dumps(cc_line("e2000000-0000-4000-8000-000000000002", "user", "and then"))
    append(transcript, new, half[:40])
    second = reme.run("auto_memory_cc", {"session_id": SID}).outputs
    assert second["claude_code"]["offset"] == size  # only the new bytes are read
    assert [m["content"] for m in second["messages"]] == ["also check staging"]
    assert second["status"] == "updated" and second["turns"] == 1
    append(transcript, half[40:] + "\n")
    third = reme.run("auto_memory_cc", {"session_id": SID}).outputs
    assert [m["content"] for m in third["messages"]] == ["and then"]
    assert [t["content"] for t in saved(reme)][-2:] == ["also check staging", "and then"]


def test_a_failed_run_loses_no_claude_code_lines(open_ws, transcript: Path):
    reme = open_ws([{"error": "HTTP 500"}, NOTE])
    with pytest.raises(PipelineError, match="stay pending"):
        reme.run("auto_memory_cc", {"session_id": SID})
    result = reme.run("auto_memory_cc", {"session_id": SID}).outputs
    assert result["status"] == "written" and result["turns"] == 5
    assert len(saved(reme)) == 5


def test_without_a_model_the_excerpt_links_the_saved_transcript(open_ws):
    reme = open_ws(None)
    out = reme.run("auto_memory_cc", {"session_id": SID}).outputs
    text = (reme.root / out["note"]).read_text(encoding="utf-8")
    assert "summarised: false" in text and f"[[sessions/{SID}.jsonl#L1]]" in text


def test_claude_config_dir_env_is_the_default(open_ws, claude: Path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    reme = open_ws(None, claude_dir=None)
    assert reme.run("auto_memory_cc", {"session_id": SID}).outputs["added"] == 5


def test_secrets_in_claude_code_turns_are_redacted_in_the_outputs(open_ws, transcript: Path):
    key = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123"
    append(transcript, cc_line("e3000000-0000-4000-8000-000000000001", "user", f"key {key}"))
    reme = open_ws(None)
    result = reme.run("auto_memory_cc", {"session_id": SID})
    assert key not in json.dumps(result.outputs)
    assert key not in (reme.root / f"sessions/{SID}.jsonl").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("session_id", "error"),
    [("*", "is not allowed"), ("../x", "is not allowed"), ("missing-session", "no Claude Code")],
)
def test_unknown_or_unsafe_session_ids_are_refused(open_ws, session_id: str, error: str):
    reme = open_ws(None)
    with pytest.raises(PipelineError, match=error):
        reme.run("auto_memory_cc", {"session_id": session_id})
    assert list((reme.root / "sessions").iterdir()) == []
    assert not (reme.state_dir / "auto_memory").exists()


def test_line_conversion_rules():
    assert to_message({"type": "summary", "summary": "x"}, False) is None
    meta = cc_line("u1", "user", "hello", isMeta=True)
    assert to_message(meta, False) is None
    side = cc_line("u2", "assistant", [{"type": "text", "text": "sub-agent"}], isSidechain=True)
    assert to_message(side, False) is None
    assert to_message(side, True) == {
        "id": "u2",
        "role": "assistant",
        "content": "sub-agent",
        "timestamp": "2026-11-02T17:05:00+00:00",
    }
    tools = cc_line("u3", "assistant", [{"type": "tool_use", "id": "t", "name": "Read"}])
    assert to_message(tools, False) is None
    assert clean_text("[Request interrupted by user for tool use]") == ""
    assert clean_text("fix it<system-reminder>\nsecret plan\n</system-reminder>") == "fix it"


def test_finding_a_missing_transcript_names_the_folder(tmp_path: Path):
    with pytest.raises(NotFoundError, match=r"projects/\*/"):
        find_session_file(tmp_path, "abc")
