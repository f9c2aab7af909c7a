"""Inline images in Claude Code and Codex sessions: kept under resource/, linked from the turn."""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from reme_core.runtime import Reme
from reme_plugins.auto_memory import codex
from reme_plugins.auto_memory.session_images import Shelf, codex_images, image_paths, save
from tests.fake_llm import plugins_with

SID = "c0ffee00-1111-4222-8333-444455556666"
NOTE = {
    "trivial": False,
    "name": "Dashboard screenshot",
    "description": "The user shared the latency dashboard.",
    "summary": "The user pasted a screenshot of the dashboard and asked about the spike.",
    "facts": [],
    "timeline": [{"line": 1, "text": "screenshot of the dashboard"}],
}


def png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (12, 8), "red").save(out, format="PNG")
    return out.getvalue()


def image_block(data: bytes, media_type: str = "image/png") -> dict[str, Any]:
    encoded = base64.b64encode(data).decode("ascii")
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": media_type, "data": encoded},
    }


def line(uuid: str, role: str, content: Any) -> str:
    obj = {
        "type": role,
        "sessionId": SID,
        "message": {"role": role, "content": content},
        "uuid": uuid,
        "timestamp": "2026-11-02T17:05:00.000Z",
    }
    return json.dumps(obj) + "\n"


@pytest.fixture
def claude(tmp_path: Path) -> Path:
    folder = tmp_path / "claude"
    (folder / "projects" / "-home-mira").mkdir(parents=True)
    return folder


def write_session(claude: Path, *lines: str) -> None:
    with open(claude / "projects" / "-home-mira" / f"{SID}.jsonl", "a", encoding="utf-8") as fh:
        fh.writelines(lines)


def saved_turns(reme: Reme) -> list[dict[str, Any]]:
    text = (reme.root / f"sessions/{SID}.jsonl").read_text(encoding="utf-8")
    return [json.loads(t) for t in text.splitlines()]


@pytest.fixture
def open_ws(open_reme: Callable[..., Reme], claude: Path) -> Callable[..., Reme]:
    def open_(script: list[Any]) -> Reme:
        steps = (
            f"[{{name: claude_code_transcript, settings: {{claude_dir: '{claude}'}}}}, "
            "{name: auto_memory}]"
        )
        overrides = [
            f"pipelines.auto_memory_cc.steps={steps}",
            "pipelines.auto_resource.steps=[{name: auto_resource}]",
        ]
        return open_reme(plugins_with(), overrides, script, "scripted")

    return open_


def test_claude_code_images_are_saved_and_the_daily_note_links_them_to_the_turn(
    open_ws: Callable[..., Reme], claude: Path
):
    data = png()
    write_session(
        claude,
        line("u1", "user", [{"type": "text", "text": "why the spike?"}, image_block(data)]),
        line("u2", "user", [image_block(data)]),  # an image and nothing else is still a turn
        line("u3", "user", [image_block(b"not a png at all", "image/png")]),
        line("a1", "assistant", [{"type": "text", "text": "That is the 17:00 deploy."}]),
    )
    reme = open_ws([NOTE])
    out = reme.run("auto_memory_cc", {"session_id": SID}).outputs
    first = f"resource/sessions/{SID}/u1-1.png"
    assert (reme.root / first).read_bytes() == data
    # The same bytes pasted again are kept once (by sha256) and linked where they are.
    assert [p.name for p in (reme.root / "resource/sessions" / SID).iterdir()] == ["u1-1.png"]
    turns = saved_turns(reme)
    assert turns[0]["content"] == f"why the spike?\n[image: [[{first}]]]"
    assert turns[1]["content"] == f"[image: [[{first}]]]"
    assert turns[2]["content"] == "[image omitted: the bytes are not image/png]"
    note = (reme.root / out["note"]).read_text(encoding="utf-8")
    assert f"user image ![[{first}]] ([[sessions/{SID}.jsonl#L1]])" in note
    assert f"user image ![[{first}]] ([[sessions/{SID}.jsonl#L2]])" in note
    assert out["claude_code"]["images"] == {
        "saved": 1,
        "linked": 2,
        "omitted": 1,
        "first_omitted": "turn u3: the bytes are not image/png",
    }


def test_a_saved_image_becomes_a_resource_note_without_a_model(
    open_ws: Callable[..., Reme], claude: Path
):
    said = [{"type": "text", "text": "the latency spike on the gateway"}, image_block(png())]
    write_session(claude, line("u1", "user", said))
    reme = open_ws([NOTE])
    reme.run("auto_memory_cc", {"session_id": SID})
    [done] = reme.run("auto_resource").outputs["notes"]  # no vision: noted, summarised: false
    assert done["resource"] == f"resource/sessions/{SID}/u1-1.png"
    text = (reme.root / done["note"]).read_text(encoding="utf-8")
    assert "summarised: false" in text
    # The words said with the image, and a link back to its turn.
    assert "## From the session\n\n> the latency spike on the gateway\n" in text
    assert f"Turn: [[sessions/{SID}.jsonl#L1]]" in text
    assert done["note"] in {h.path for h in reme.search("gateway latency").hits}


def test_codex_input_images_are_named_in_the_turn_and_saved(tmp_path: Path):
    data = png()
    url = "data:image/png;base64," + base64.b64encode(data).decode("ascii")
    item = {
        "type": "message",
        "role": "user",
        "content": [
            {"type": "input_text", "text": "what is this?"},
            {"type": "input_image", "image_url": url},
            {"type": "input_image", "image_url": "https://example.com/x.png"},
        ],
    }
    obj = {"timestamp": "2026-11-02T17:05:00.000Z", "type": "response_item", "payload": item}
    raw = json.dumps(obj).encode()
    shelf = Shelf(tmp_path, "s1")
    message = codex.to_message(obj, raw, shelf)
    assert message is not None
    path = f"resource/sessions/s1/{message['id']}-1.png"
    assert message["content"] == (
        f"what is this?\n[image: [[{path}]]]\n[image omitted: not inline (a URL or file reference)]"
    )
    assert codex.to_message(obj, raw) == {**message, "content": "what is this?"}
    images = codex_images(item["content"])
    paths = image_paths("s1", message["id"], images)
    assert save(tmp_path, images, paths) == [path]
    assert (tmp_path / path).read_bytes() == data
    assert save(tmp_path, images, paths) == []  # already there with these bytes
