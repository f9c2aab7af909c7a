"""claude_code_transcript on lines it cannot read yet: a last line still being written waits, and
a line in a shape it does not know is reported, remembered and read again on every run, so a
reader that learns the shape picks it up; the turns around it are saved meanwhile, once."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from reme_core.runtime import Reme
from reme_plugins.auto_memory import claude_code
from tests.fake_llm import plugins_with

SID = "5e551011-aaaa-4bbb-8ccc-123456789abc"


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    path = tmp_path / "claude" / "projects" / "-home-mira-kiln" / f"{SID}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("", encoding="utf-8")
    return path


@pytest.fixture
def reme(open_reme: Callable[..., Reme], tmp_path: Path) -> Reme:
    steps = (
        f"[{{name: claude_code_transcript, settings: {{claude_dir: '{tmp_path / 'claude'}'}}}}, "
        "{name: auto_memory}]"
    )
    return open_reme(plugins_with(), [f"pipelines.auto_memory_cc.steps={steps}"])  # no model


def line(uuid: str, role: str, content: Any) -> str:
    body = {"type": role, "uuid": uuid, "sessionId": SID, "timestamp": "2026-12-03T10:00:00Z"}
    return json.dumps({**body, "message": {"role": role, "content": content}}) + "\n"


def append(path: Path, text: str) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(text)


def saved(reme: Reme) -> list[str]:
    path = reme.root / "sessions" / f"{SID}.jsonl"
    return [json.loads(raw)["content"] for raw in path.read_text(encoding="utf-8").splitlines()]


def capture(reme: Reme) -> dict[str, Any]:
    return reme.run("auto_memory_cc", {"session_id": SID}).outputs


def test_a_half_written_last_line_waits_and_is_reported(reme: Reme, transcript: Path) -> None:
    append(transcript, line("u1", "user", "where is the kiln key?"))
    answer = line("a1", "assistant", [{"type": "text", "text": "behind the blue door"}])
    append(transcript, answer[:30])
    first = capture(reme)
    assert first["claude_code"]["partial_bytes"] == 30
    assert "unknown_lines" not in first["claude_code"]  # being written is not unknown
    assert saved(reme) == ["where is the kiln key?"]
    append(transcript, answer[30:])
    second = capture(reme)
    assert second["claude_code"]["partial_bytes"] == 0
    assert saved(reme) == ["where is the kiln key?", "behind the blue door"]
    assert capture(reme)["status"] == "unchanged" and len(saved(reme)) == 2


def test_an_unknown_line_is_reported_remembered_and_picked_up_by_a_reader_that_knows_it(
    reme: Reme, transcript: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    strange = {"kind": "text-v9", "body": "the spare key is with Ines"}
    append(transcript, line("u1", "user", "where is the kiln key?"))
    at = transcript.stat().st_size
    append(transcript, line("a1", "assistant", strange))
    append(transcript, "{not json at all\n")
    append(transcript, line("u2", "user", "thanks"))
    first = capture(reme)["claude_code"]["unknown_lines"]
    assert first == {
        "count": 2,
        "new": 2,
        "forgotten": 0,
        "first": at,
        "reason": "type assistant, content is dict",
    }
    assert saved(reme) == ["where is the kiln key?", "thanks"]  # the known turns, meanwhile
    again = capture(reme)["claude_code"]["unknown_lines"]
    assert again["count"] == 2 and again["new"] == 0  # still there, no longer news

    # A reader that knows the shape (a newer reme): the next run saves the turn, once.
    def newer_text(content: Any) -> str:
        if isinstance(content, dict) and content.get("kind") == "text-v9":
            return str(content["body"])
        return known_text(content)

    def newer_reason(obj: Any) -> str | None:
        message = obj.get("message") if isinstance(obj, dict) else None
        if isinstance(message, dict) and isinstance(message.get("content"), dict):
            return None
        return known_reason(obj)

    known_text, known_reason = claude_code.block_text, claude_code.unknown_reason
    monkeypatch.setattr(claude_code, "block_text", newer_text)
    monkeypatch.setattr(claude_code, "unknown_reason", newer_reason)
    capture(reme)
    assert saved(reme) == ["where is the kiln key?", "thanks", "the spare key is with Ines"]
    last = capture(reme)["claude_code"]["unknown_lines"]
    assert last["count"] == 1 and last["reason"] == "not JSON"  # the corrupt line stays
    assert len(saved(reme)) == 3  # nothing twice
