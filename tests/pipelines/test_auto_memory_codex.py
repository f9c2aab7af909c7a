"""auto_memory_codex: a Codex rollout file, read incrementally by thread id, becomes a note.

The fixture under examples/auto_memory/codex/ is a real rollout written by the pinned codex
(0.171.0, ``codex exec`` then ``codex exec resume --last`` against the scripted Responses server
of tests/integrations), with long instruction texts shortened and the project path renamed.
"""

from __future__ import annotations

import json
import logging
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
from reme_plugins.auto_memory import codex as codex_module
from reme_plugins.auto_memory.codex import block_text, classify, find_rollout, rollouts, to_message
from tests.fake_llm import plugins_with

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "auto_memory" / "codex"
SID = "01a23d2d-20d8-78d3-af70-63f1e6350dbe"
ROLLOUT = f"sessions/2026/12/03/rollout-2026-12-03T18-31-37-{SID}.jsonl"
ANSWER = "From the workspace: The kiln key The larkspur kiln key hangs behind the blue enamel door"

NOTE = {
    "trivial": False,
    "name": "Larkspur kiln key",
    "description": "Where the kiln key hangs.",
    "summary": "The user asked where the larkspur kiln key hangs; it is behind the blue door.",
    "facts": [
        {
            "text": "The kiln key hangs behind the blue enamel door.",
            "quote": "behind the blue enamel door",
            "lines": [2],
        }
    ],
    "timeline": [{"line": 1, "text": "asked for the kiln key"}],
}
SMALL_NOTE = {**NOTE, "facts": [], "timeline": []}


@pytest.fixture
def codex(tmp_path: Path) -> Path:
    folder = tmp_path / "codex"
    shutil.copytree(EXAMPLE, folder)
    return folder


@pytest.fixture
def rollout(codex: Path) -> Path:
    return codex / ROLLOUT


@pytest.fixture
def open_ws(open_reme: Callable[..., Reme], codex: Path) -> Callable[..., Reme]:
    plugins = plugins_with()

    def open_(
        script: list[Any] | None = None, codex_home: Path | None = codex, **settings: str
    ) -> Reme:
        given = {"codex_home": str(codex_home)} if codex_home else {}
        given |= settings
        inner = ", ".join(f"{k}: '{v}'" for k, v in given.items())
        steps = f"[{{name: codex_transcript, settings: {{{inner}}}}}, {{name: auto_memory}}]"
        return open_reme(
            plugins, [f"pipelines.auto_memory_codex.steps={steps}"], script, "scripted"
        )

    return open_


def saved(reme: Reme) -> list[dict[str, Any]]:
    text = (reme.root / f"sessions/{SID}.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def message(role: str, text: str, ordinal: int, **payload: Any) -> dict[str, Any]:
    block = "input_text" if role == "user" else "output_text"
    return {
        "timestamp": "2026-12-03T18:40:00.000Z",
        "ordinal": ordinal,
        "type": "response_item",
        "payload": {
            "type": "message",
            "id": f"msg_{ordinal}",
            "role": role,
            "content": [{"type": block, "text": text}],
            **payload,
        },
    }


def append(path: Path, *lines: dict[str, Any] | str) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        for line in lines:
            fh.write(line if isinstance(line, str) else json.dumps(line) + "\n")


def test_only_what_the_user_and_assistant_said_is_kept(open_ws):
    reme = open_ws([NOTE])
    result = reme.run("auto_memory_codex", {"session_id": SID})
    turns = saved(reme)
    assert [t["role"] for t in turns] == ["user", "assistant", "user", "assistant"]
    assert (
        turns[0]["content"] == "Where does the larkspur kiln key hang? password=[REDACTED:secret]"
    )
    assert turns[1]["content"].startswith(ANSWER)
    assert turns[2]["content"] == "And the second question?"
    assert turns[0]["timestamp"] == "2026-12-03T18:31:37.658000+00:00"
    text = "\n".join(t["content"] for t in turns)
    for noise in ("AGENTS.md", "environment_context", "skills_instructions", "Wall time"):
        assert noise not in text  # injected context, developer text, tool output
    assert "hunter2secret" not in json.dumps(result.outputs)
    out = result.outputs
    assert out["status"] == "written" and out["hint"] == "A Codex session in /home/mira/larkspur"
    front, _ = parse_frontmatter((reme.root / out["note"]).read_text(encoding="utf-8"))
    assert out["note"].startswith("daily/2026-12-03/")
    assert front["session_id"] == SID
    target = front["source"].strip("[]")
    resolved = LinkResolver(reme.paths.iter_files()).resolve(target)
    assert resolved == ("resolved", f"sessions/{SID}.jsonl")


def test_reading_is_incremental_and_waits_for_a_partial_line(open_ws, rollout: Path):
    reme = open_ws([NOTE, SMALL_NOTE, SMALL_NOTE, SMALL_NOTE])
    reme.run("auto_memory_codex", {"session_id": SID})
    again = reme.run("auto_memory_codex", {"session_id": SID}).outputs
    assert again["messages"] == [] and again["status"] == "unchanged"
    size = rollout.stat().st_size
    half = json.dumps(message("assistant", "and then the door", 31))
    append(rollout, message("user", "also check the annex", 30), half[:50])
    second = reme.run("auto_memory_codex", {"session_id": SID}).outputs
    assert second["codex"]["offset"] == size  # only the new bytes are read
    assert [m["content"] for m in second["messages"]] == ["also check the annex"]
    assert second["status"] == "updated" and second["turns"] == 1
    assert second["codex"]["partial_bytes"] == 50  # the half-written line, left for later
    append(rollout, half[50:] + "\n")
    third = reme.run("auto_memory_codex", {"session_id": SID}).outputs
    assert [m["content"] for m in third["messages"]] == ["and then the door"]
    assert [t["content"] for t in saved(reme)][-2:] == ["also check the annex", "and then the door"]
    # The same text said again is a new turn: ids come from the line, not from the text.
    append(rollout, message("user", "also check the annex", 32))
    fourth = reme.run("auto_memory_codex", {"session_id": SID}).outputs
    assert fourth["added"] == 1 and len(saved(reme)) == 7


def test_a_failed_run_loses_no_codex_lines(open_ws):
    reme = open_ws([{"error": "HTTP 500"}, NOTE])
    with pytest.raises(PipelineError, match="stay pending"):
        reme.run("auto_memory_codex", {"session_id": SID})
    result = reme.run("auto_memory_codex", {"session_id": SID}).outputs
    assert result["status"] == "written" and result["turns"] == 4
    assert len(saved(reme)) == 4


def test_an_unknown_record_is_kept_and_read_again_until_it_is_known(
    open_ws, rollout: Path, caplog, monkeypatch
):
    inside = message("user", "inside the new record", 41)
    append(
        rollout,
        message("user", "before the new record", 40),
        {**inside, "type": "conversation_v9"},  # a newer Codex's envelope
        message("user", "after the new record", 42),
    )
    reme = open_ws(None)
    with caplog.at_level(logging.WARNING, logger="reme.auto_memory.codex"):
        out = reme.run("auto_memory_codex", {"session_id": SID}).outputs
    unknown = out["codex"]["unknown_lines"]
    assert unknown["count"] == 1 and unknown["new"] == 1
    assert unknown["reason"].startswith("type 'conversation_v9'")
    assert "inside the new record" not in unknown["reason"]  # the shape, never the content
    (logged,) = [r.getMessage() for r in caplog.records]  # one line in the log
    assert "1 new line(s)" in logged and "read again on every capture" in logged
    contents = [t["content"] for t in saved(reme)]
    assert contents[-2:] == ["before the new record", "after the new record"]
    # The next run reads it again, quietly; a reader that knows the format then saves it.
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="reme.auto_memory.codex"):
        again = reme.run("auto_memory_codex", {"session_id": SID}).outputs["codex"]
    assert again["unknown_lines"]["new"] == 0 and caplog.records == []
    original = codex_module.classify

    def knows_v9(obj):
        if isinstance(obj, dict) and obj.get("type") == "conversation_v9":
            return "item", obj["payload"]
        return original(obj)

    monkeypatch.setattr(codex_module, "classify", knows_v9)
    reme.run("auto_memory_codex", {"session_id": SID})
    assert [t["content"] for t in saved(reme)][-1] == "inside the new record"
    last = reme.run("auto_memory_codex", {"session_id": SID}).outputs["codex"]
    assert "unknown_lines" not in last and len(saved(reme)) == 7


def test_a_line_that_is_not_json_or_of_another_shape_is_reported(open_ws, rollout: Path):
    odd = message("user", "x", 51)
    odd["payload"]["content"] = {"text": "an object, not blocks"}
    append(rollout, "{not json\n", json.dumps(odd) + "\n", message("user", "still here", 52))
    reme = open_ws(None)
    out = reme.run("auto_memory_codex", {"session_id": SID}).outputs["codex"]
    assert out["unknown_lines"]["count"] == 2 and out["unknown_lines"]["reason"] == "not JSON"
    state = json.loads((reme.state_dir / "auto_memory" / "codex" / f"{SID}.json").read_text())
    assert [r for _, r in state["unknown"]] == [
        "not JSON",
        "a message whose content is a JSON dict",
    ]
    assert saved(reme)[-1]["content"] == "still here"


def test_the_older_bare_format_is_read(open_ws, codex: Path):
    sid = "5973b6c0-94b8-487b-a530-2aeb6098ae0e"
    path = codex / "sessions" / "2025" / "05" / "07" / f"rollout-2025-05-07T17-24-21-{sid}.jsonl"
    path.parent.mkdir(parents=True)
    lines = [
        {"id": sid, "timestamp": "2025-05-07T17:24:21.123Z", "instructions": None},
        {"record_type": "state"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "yo"}],
        },
    ]
    append(path, *lines)
    reme = open_ws(None)
    out = reme.run("auto_memory_codex", {"session_id": sid}).outputs
    assert [m["content"] for m in out["messages"]] == ["hi", "yo"]
    assert "unknown_lines" not in out["codex"]


def test_codex_home_env_is_the_default(open_ws, codex: Path, monkeypatch):
    monkeypatch.setenv("CODEX_HOME", str(codex))
    reme = open_ws(None, codex_home=None)
    assert reme.run("auto_memory_codex", {"session_id": SID}).outputs["added"] == 4


@pytest.mark.parametrize(
    ("session_id", "error"),
    [("*", "is not allowed"), ("../x", "is not allowed"), ("missing-session", "no Codex rollout")],
)
def test_unknown_or_unsafe_session_ids_are_refused(open_ws, session_id: str, error: str):
    reme = open_ws(None)
    with pytest.raises(PipelineError, match=error):
        reme.run("auto_memory_codex", {"session_id": session_id})
    assert list((reme.root / "sessions").iterdir()) == []
    assert not (reme.state_dir / "auto_memory").exists()


def test_line_rules():
    assert classify({"type": "event_msg", "payload": {"type": "user_message"}}) == ("skip", None)
    assert classify({"type": "brand_new", "payload": {}})[0] == "unknown"
    assert classify([1, 2])[0] == "unknown"
    developer = message("user", "x", 1)
    developer["payload"]["role"] = "developer"
    assert to_message(developer, b"x") is None
    call = {"type": "response_item", "payload": {"type": "function_call", "name": "search"}}
    assert to_message(call, b"y") is None
    injected = [
        {
            "type": "input_text",
            "text": "# AGENTS.md instructions for /p\n\n<INSTRUCTIONS>x</INSTRUCTIONS>",
        },
        {
            "type": "input_text",
            "text": "<environment_context>\n <cwd>/p</cwd>\n</environment_context>",
        },
        {"type": "input_text", "text": "real question"},
        {"type": "input_image", "image_url": "data:..."},
    ]
    assert block_text(injected) == "real question"


def test_finding_rollouts(codex: Path, tmp_path: Path):
    assert [sid for sid, _ in rollouts(codex)] == [SID]
    assert find_rollout(codex, SID.upper()).name.endswith(f"{SID}.jsonl")
    with pytest.raises(NotFoundError, match=r"sessions/"):
        find_rollout(tmp_path, SID)
