"""Images a tool returned in a Claude Code or Codex session: kept under resource/sessions/,
linked from the daily note at the tool's turn, never sent to a model.

The Claude Code lines have the shape the real host (2.1.332) writes when its Read tool opens a
png: the assistant's ``tool_use`` line, then a user line whose ``tool_result`` block holds an
``image`` block (with ``toolUseResult`` and ``sourceToolAssistantUUID`` beside it), appended to
the example transcript of test_auto_memory_cc. The Codex lines are a ``function_call`` and a
``function_call_output`` whose output is a list of parts with an ``input_image`` data URL, as
codex 0.171.0 writes for its view_image tool, appended to the example rollout.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import random
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from reme_core.pipelines.engine import PipelineError
from reme_core.runtime import Reme
from reme_plugins.auto_memory import session_images
from tests.fake_llm import RecordingLlm, plugins_with

ROOT = Path(__file__).resolve().parents[2]
CC_EXAMPLE = ROOT / "examples" / "auto_memory" / "claude"
CC_SID = "7b1f3c2a-5d4e-4f60-9a8b-0c1d2e3f4a5b"
CC_FILE = f"projects/-home-mira-larkspur/{CC_SID}.jsonl"
CODEX_EXAMPLE = ROOT / "examples" / "auto_memory" / "codex"
CODEX_SID = "01a23d2d-20d8-78d3-af70-63f1e6350dbe"
ROLLOUT = f"sessions/2026/12/03/rollout-2026-12-03T18-31-37-{CODEX_SID}.jsonl"
CHART = "/home/mira/larkspur/docs/latency.png"

NOTE = {
    "trivial": False,
    "name": "Larkspur latency chart",
    "description": "The agent read the latency chart.",
    "summary": "The agent opened the latency chart to explain the spike.",
    "facts": [],
    "timeline": [{"line": 1, "text": "prod down"}],
}


def png(color: str = "teal", size: tuple[int, int] = (48, 32)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, color).save(out, format="PNG")
    return out.getvalue()


def noise_png(side: int) -> bytes:
    """A png that does not compress: its size grows with ``side``."""
    rng = random.Random(7)
    image = Image.frombytes(
        "RGB", (side, side), bytes(rng.randrange(256) for _ in range(3 * side * side))
    )
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def image_block(data: str, media_type: str = "image/png") -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "data": data, "media_type": media_type}}


def cc_base(uuid: str, parent: str | None, kind: str, stamp: str) -> dict[str, Any]:
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "userType": "external",
        "entrypoint": "sdk-cli",
        "cwd": "/home/mira/larkspur",
        "sessionId": CC_SID,
        "version": "2.1.332",
        "gitBranch": "main",
        "type": kind,
        "uuid": uuid,
        "timestamp": f"2026-11-02T{stamp}.000Z",
    }


def cc_read(uuid: str, parent: str, call: str, path: str = CHART) -> dict[str, Any]:
    """The assistant line calling Read on ``path``."""
    message = {
        "id": f"msg_{uuid[:8]}",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "tool_use", "id": call, "name": "Read", "input": {"file_path": path}}],
        "stop_reason": "tool_use",
    }
    return {**cc_base(uuid, parent, "assistant", "17:06:00"), "message": message}


def cc_result(uuid: str, parent: str, call: str, *blocks: dict[str, Any]) -> dict[str, Any]:
    """The user line carrying the tool's result: ``blocks`` inside one tool_result block."""
    content = [{"tool_use_id": call, "type": "tool_result", "content": list(blocks)}]
    first = blocks[0]["source"] if blocks and "source" in blocks[0] else {}
    return {
        **cc_base(uuid, parent, "user", "17:06:01"),
        "promptId": "e2e36483-3922-4138-9b7b-e639d0b1e404",
        "message": {"role": "user", "content": content},
        "toolUseResult": {
            "type": "image",
            "file": {"base64": first.get("data", ""), "type": first.get("media_type", "")},
        },
        "sourceToolAssistantUUID": parent,
        "permissionDecision": {"decision": "accept", "source": "config"},
    }


def cc_said(uuid: str, parent: str | None, role: str, text: str) -> dict[str, Any]:
    content: Any = text if role == "user" else [{"type": "text", "text": text}]
    line = {
        **cc_base(uuid, parent, role, "17:06:05"),
        "message": {"role": role, "content": content},
    }
    if role == "assistant":
        line["message"] |= {
            "id": f"msg_{uuid[:8]}",
            "type": "message",
            "model": "claude-sonnet-4-5",
        }
    return line


def append(path: Path, *lines: dict[str, Any]) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.writelines(json.dumps(line) + "\n" for line in lines)


def saved(reme: Reme, sid: str) -> list[dict[str, Any]]:
    text = (reme.root / f"sessions/{sid}.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def kept_files(reme: Reme, sid: str) -> list[str]:
    folder = reme.root / "resource" / "sessions" / sid
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


@pytest.fixture
def claude(tmp_path: Path) -> Path:
    folder = tmp_path / "claude"
    shutil.copytree(CC_EXAMPLE, folder)
    return folder


@pytest.fixture
def open_cc(open_reme: Callable[..., Reme], claude: Path) -> Callable[..., Reme]:
    def open_(script: list[Any] | None, **settings: Any) -> Reme:
        given = ", ".join(f"{k}: {v!r}" for k, v in {"claude_dir": str(claude), **settings}.items())
        steps = f"[{{name: claude_code_transcript, settings: {{{given}}}}}, {{name: auto_memory}}]"
        overrides = [f"pipelines.auto_memory_cc.steps={steps}"]
        return open_reme(plugins_with(RecordingLlm), overrides, script)

    return open_


def read_chart_turn(transcript: Path, data: bytes, n: int = 1) -> tuple[str, str]:
    """A user question, a Read of the chart returning ``data``, the answer; (result uuid, b64)."""
    encoded = b64(data)
    ask, call, result, answer = (f"f{n}000000-0000-4000-8000-00000000000{i}" for i in range(4))
    append(
        transcript,
        cc_said(ask, None, "user", "What does docs/latency.png show?"),
        cc_read(call, ask, f"toolu_01Chart{n}"),
        cc_result(result, call, f"toolu_01Chart{n}", image_block(encoded)),
        cc_said(answer, result, "assistant", "The p99 latency spikes at 17:00."),
    )
    return result, encoded


def test_a_png_the_read_tool_returned_is_kept_and_linked_at_the_tool_turn(
    open_cc: Callable[..., Reme], claude: Path
):
    transcript = claude / CC_FILE
    data = png()
    result, encoded = read_chart_turn(transcript, data)
    reme = open_cc([NOTE])
    out = reme.run("auto_memory_cc", {"session_id": CC_SID}).outputs
    kept = f"resource/sessions/{CC_SID}/{result}-1.png"
    assert (reme.root / kept).read_bytes() == data
    turns = saved(reme, CC_SID)
    assert [t["role"] for t in turns[-3:]] == ["user", "tool", "assistant"]
    line = len(turns) - 1  # the tool's turn, 1-based
    assert turns[-2] == {
        "id": result,
        "role": "tool",
        "content": f"Read {CHART} returned:\n[image: [[{kept}]]]",
        "timestamp": "2026-11-02T17:06:01+00:00",
    }
    note = (reme.root / out["note"]).read_text(encoding="utf-8")
    assert f"tool image ![[{kept}]] ([[sessions/{CC_SID}.jsonl#L{line}]])" in note
    assert out["claude_code"]["images"] == {"saved": 1, "linked": 1, "omitted": 0}
    # The model was shown the link, never the image.
    [prompt] = reme.llm.prompts("NoteDraft")
    assert f"[[{kept}]]" in prompt and encoded not in prompt and encoded[:40] not in prompt
    # Nothing new on the next run; the same png read again later is kept once, by its bytes.
    again = reme.run("auto_memory_cc", {"session_id": CC_SID}).outputs
    assert again["messages"] == [] and "images" not in again["claude_code"]
    second, _ = read_chart_turn(transcript, data, n=2)
    reme = open_cc([NOTE])
    out = reme.run("auto_memory_cc", {"session_id": CC_SID}).outputs
    assert kept_files(reme, CC_SID) == [f"{result}-1.png"]
    assert next(t for t in saved(reme, CC_SID) if t["id"] == second)["content"].endswith(
        f"[image: [[{kept}]]]"
    )
    assert out["claude_code"]["images"] == {"saved": 0, "linked": 1, "omitted": 0}


def test_without_a_model_the_excerpt_links_the_tool_image(
    open_cc: Callable[..., Reme], claude: Path
):
    result, _ = read_chart_turn(claude / CC_FILE, png())
    reme = open_cc(None)
    out = reme.run("auto_memory_cc", {"session_id": CC_SID}).outputs
    text = (reme.root / out["note"]).read_text(encoding="utf-8")
    assert "summarised: false" in text
    assert f"- **tool** 17:06 [[sessions/{CC_SID}.jsonl#L" in text
    assert f"[[resource/sessions/{CC_SID}/{result}-1.png]]" in text


def test_bad_tool_images_are_reported_and_lose_no_turn(
    open_cc: Callable[..., Reme], claude: Path, monkeypatch, caplog
):
    monkeypatch.setattr(session_images, "MAX_IMAGE_BYTES", 4096)
    big = noise_png(64)
    assert len(big) > 4096
    jpeg = io.BytesIO()
    Image.new("RGB", (8, 8), "red").save(jpeg, format="JPEG")
    transcript = claude / CC_FILE
    ask, call, result, answer = (f"b0000000-0000-4000-8000-00000000000{i}" for i in range(4))
    append(
        transcript, cc_said(ask, None, "user", "Open the charts"), cc_read(call, ask, "toolu_01B")
    )
    first = open_cc([NOTE])
    for _ in range(2):  # the second run confirms the first's lines: the cursor passes them
        first.run("auto_memory_cc", {"session_id": CC_SID})
    append(
        transcript,
        cc_result(
            result,
            call,
            "toolu_01B",
            image_block(b64(jpeg.getvalue())),  # a jpeg that says it is a png
            image_block("%%% not base64 %%%"),
            image_block(b64(png()), "image/bmp"),
            {"type": "image", "source": {"type": "url", "url": "https://example.com/x.png"}},
            image_block(b64(big)),  # over the limit, in a line over max_read_bytes
        ),
        cc_said(answer, result, "assistant", "Those files are not readable charts."),
    )
    reme = open_cc([NOTE, NOTE], max_read_bytes=1024)
    with caplog.at_level(logging.WARNING, logger="reme.auto_memory.claude_code"):
        out = reme.run("auto_memory_cc", {"session_id": CC_SID}).outputs
    assert kept_files(reme, CC_SID) == []  # nothing of it written
    turns = saved(reme, CC_SID)
    assert [t["id"] for t in turns[-2:]] == [ask, result]  # the long line is read whole
    assert turns[-1]["content"] == (
        "A tool call returned:\n"  # its call was read by the run before: no name to show
        "[image omitted: the bytes are not image/png]\n"
        "[image omitted: the data is not base64]\n"
        "[image omitted: type image/bmp is not kept]\n"
        "[image omitted: not inline (a URL or file reference)]\n"
        "[image omitted: over 4096 bytes]"
    )
    assert out["claude_code"]["images"] == {
        "saved": 0,
        "linked": 0,
        "omitted": 5,
        "first_omitted": f"turn {result}: the bytes are not image/png",
    }
    assert f"5 image(s) not kept (first: turn {result}: the bytes are not image/png)" in (
        caplog.text
    )
    for _ in range(2):  # the answer, past this read: the next confirms the line, then reads on
        reme.run("auto_memory_cc", {"session_id": CC_SID})
    assert [t["id"] for t in saved(reme, CC_SID)[-3:]] == [ask, result, answer]
    # The cursor moved past them all: the next run has nothing to read again.
    again = reme.run("auto_memory_cc", {"session_id": CC_SID}).outputs
    assert again["messages"] == [] and again["status"] == "unchanged"


def test_a_failed_run_keeps_the_tool_image_turn_for_the_next(
    open_cc: Callable[..., Reme], claude: Path
):
    result, _ = read_chart_turn(claude / CC_FILE, png())
    reme = open_cc([{"error": "HTTP 500"}, NOTE])
    with pytest.raises(PipelineError, match="stay pending"):
        reme.run("auto_memory_cc", {"session_id": CC_SID})
    out = reme.run("auto_memory_cc", {"session_id": CC_SID}).outputs
    assert out["status"] == "written"
    assert [t["id"] for t in saved(reme, CC_SID)].count(result) == 1
    assert kept_files(reme, CC_SID) == [f"{result}-1.png"]
    note = (reme.root / out["note"]).read_text(encoding="utf-8")
    assert f"tool image ![[resource/sessions/{CC_SID}/{result}-1.png]]" in note


# -- Codex ---------------------------------------------------------------------------------------


@pytest.fixture
def codex(tmp_path: Path) -> Path:
    folder = tmp_path / "codex"
    shutil.copytree(CODEX_EXAMPLE, folder)
    return folder


def codex_item(ordinal: int, payload: dict[str, Any]) -> dict[str, Any]:
    stamp = f"2026-12-03T18:41:{ordinal % 60:02d}.000Z"
    return {"timestamp": stamp, "ordinal": ordinal, "type": "response_item", "payload": payload}


def test_codex_view_image_output_is_kept_and_linked_at_the_tool_turn(
    open_reme: Callable[..., Reme], codex: Path
):
    data = png("orange")
    url = f"data:image/png;base64,{b64(data)}"
    # As codex 0.171.0 wrote them for view_image (the path renamed, the image redrawn).
    turn = {"turn_id": "01a23e2d-0c6c-78c0-9c84-1d13a352a16f"}
    call = {
        "type": "function_call",
        "status": "completed",
        "id": "fc_scripted_0001",
        "name": "view_image",
        "arguments": json.dumps({"path": "/home/mira/larkspur/chart.png"}),
        "call_id": "call_scripted_0001",
        "internal_chat_message_metadata_passthrough": turn,
    }
    output = {
        "type": "function_call_output",
        "id": "fco_01a23e2d-0cd9-7e93-9d31-6a6e43bf952d",
        "call_id": "call_scripted_0001",
        "output": [{"type": "input_image", "image_url": url, "detail": "high"}],
        "internal_chat_message_metadata_passthrough": turn,
    }
    lying = {  # an MCP tool's output: text, and a gif that is really a png
        "type": "function_call_output",
        "id": "fco_2",
        "call_id": "call_unseen",
        "output": [
            {"type": "input_text", "text": "rendered"},
            {"type": "input_image", "image_url": f"data:image/gif;base64,{b64(data)}"},
        ],
    }
    answer = {
        "type": "message",
        "id": "msg_9",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "The chart is orange."}],
    }
    append(
        codex / ROLLOUT,
        *(codex_item(40 + i, p) for i, p in enumerate([call, output, lying, answer])),
    )
    steps = (
        f"[{{name: codex_transcript, settings: {{codex_home: '{codex}'}}}}, {{name: auto_memory}}]"
    )
    reme = open_reme(
        plugins_with(RecordingLlm), [f"pipelines.auto_memory_codex.steps={steps}"], [NOTE]
    )
    out = reme.run("auto_memory_codex", {"session_id": CODEX_SID}).outputs
    turns = saved(reme, CODEX_SID)
    assert [t["role"] for t in turns[-3:]] == ["tool", "tool", "assistant"]
    [kept] = kept_files(reme, CODEX_SID)
    path = f"resource/sessions/{CODEX_SID}/{kept}"
    assert (reme.root / path).read_bytes() == data and kept == f"{turns[-3]['id']}-1.png"
    assert (
        turns[-3]["content"]
        == f"view_image /home/mira/larkspur/chart.png returned:\n[image: [[{path}]]]"
    )
    assert (
        turns[-2]["content"]
        == "A tool call returned:\n[image omitted: the bytes are not image/gif]"
    )
    note = (reme.root / out["note"]).read_text(encoding="utf-8")
    assert f"tool image ![[{path}]] ([[sessions/{CODEX_SID}.jsonl#L{len(turns) - 2}]])" in note
    assert out["codex"]["images"] == {
        "saved": 1,
        "linked": 1,
        "omitted": 1,
        "first_omitted": f"turn {turns[-2]['id']}: the bytes are not image/gif",
    }
    assert b64(data)[:40] not in reme.llm.prompts("NoteDraft")[0]
