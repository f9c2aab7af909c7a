"""auto_resource on images: described by a vision model, kept without one, refused when bad."""

from __future__ import annotations

import base64
import io
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import KEYWORD_ONLY_ENV
from PIL import Image, ImageDraw

from reme_core.cli import cli
from reme_core.runtime import Reme
from reme_core.workspace.hashing import content_hash
from reme_core.workspace.notes import parse_note
from tests.fake_llm import RecordingLlm, plugins_with
from tests.fake_openai_server import ScriptedServer, Send

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "images" / "make_example.py"
VISION = "pipelines.auto_resource.steps=[{name: auto_resource, settings: {vision: true}}]"


class VisionLlm(RecordingLlm):
    """Answers ImageDescription by echoing the id and file name the prompt gives, unless told to
    answer ``wrong_id``, ``wrong_file`` or ``garbage``."""

    name = "fake_vision_llm"

    def __init__(self, settings: Any = None, context: Any = None):
        super().__init__(settings, context)
        self.mode = "echo"

    def respond(self, kind: str, messages: list[dict[str, Any]]) -> Any:
        assert kind == "ImageDescription"
        if self.mode == "garbage":
            return "the image is nice"  # not JSON: every attempt fails validation
        text = messages[1]["content"][0]["text"]
        found = re.search(r"file (\S+) \(image id ([0-9a-f]+),", text)
        assert found is not None, text
        file, image = found.groups()
        if self.mode == "wrong_id":
            image = "0" * len(image)
        if self.mode == "wrong_file":
            file = "other.png"
        return {
            "image_id": image,
            "file_name": file,
            "name": "Lighthouse at dusk",
            "description": "A photo of the old lighthouse.",
            "shows": "A striped lighthouse against an orange sky, gulls over the water.",
            "text": "KEEP OUT",
            "key_points": ["The lighthouse is striped red and white."],
        }


def png(text: str = "KEEP OUT", size: tuple[int, int] = (64, 40)) -> bytes:
    image = Image.new("RGB", size, "orange")
    ImageDraw.Draw(image).text((2, 2), text, fill="black")
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def jpeg_with_exif() -> bytes:
    image = Image.new("RGB", (32, 32), "blue")
    exif = Image.Exif()
    exif.get_ifd(0x8769)[0x9003] = "2024:05:01 18:30:00"
    gps = exif.get_ifd(0x8825)
    gps.update({1: "N", 2: (48.0, 51.0, 36.0), 3: "W", 4: (2.0, 21.0, 0.0)})
    out = io.BytesIO()
    image.save(out, format="JPEG", exif=exif.tobytes())
    return out.getvalue()


def open_workspace(root: Path, *overrides: str, llm: str | None = "fake_vision_llm") -> Reme:
    settings = [
        "timezone=UTC",
        VISION,
        *([f"components.llm={{name: {llm}}}"] if llm else []),
        *overrides,
    ]
    return Reme.open(
        root, plugins=plugins_with(VisionLlm), env=KEYWORD_ONLY_ENV, overrides=settings
    )


def write(root: Path, rel: str, data: bytes) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_bytes(data)


def note_of(root: Path, path: str) -> Any:
    return parse_note(path, (root / path).read_text(encoding="utf-8"))


def notes_written(root: Path) -> list[str]:
    daily = root / "daily"
    return sorted(str(p.relative_to(root)) for p in daily.rglob("*.md")) if daily.exists() else []


@pytest.fixture
def reme(root: Path) -> Iterator[Reme]:
    with open_workspace(root) as opened:
        yield opened


def test_an_image_is_sent_as_an_image_part_and_described(reme: Reme, root: Path):
    data = png()
    write(root, "resource/inbox/lighthouse.png", data)
    result = reme.run("auto_resource")
    [done] = result.outputs["notes"]
    assert done["action"] == "created" and result.outputs["skipped"] == []
    assert isinstance(reme.llm, VisionLlm)
    [(kind, messages)] = reme.llm.calls
    assert kind == "ImageDescription"
    text_part, image_part = messages[1]["content"]
    assert image_part["type"] == "image_url"
    assert image_part["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(
        data
    ).decode("ascii")
    assert content_hash(data)[:16] in text_part["text"] and "lighthouse.png" in text_part["text"]
    note = note_of(root, done["note"])
    fm = note.frontmatter
    assert fm["summarised"] is True and fm["resource_type"] == "image"
    assert fm["source_resource"] == "[[resource/inbox/lighthouse.png]]"
    assert fm["image_format"] == "png" and fm["image_size"] == "64x40"
    assert note.name == "Lighthouse at dusk"
    assert "striped lighthouse" in note.body and "## Text in the image\n\nKEEP OUT" in note.body
    assert "![[resource/inbox/lighthouse.png]]" in note.body
    assert (root / "resource/inbox/lighthouse.png").read_bytes() == data  # the image is kept
    assert reme.run("auto_resource").outputs["unchanged"] == 1  # and not sent again


def test_exif_date_and_place_reach_the_prompt_and_the_note(reme: Reme, root: Path):
    write(root, "resource/walk.jpg", jpeg_with_exif())
    [done] = reme.run("auto_resource").outputs["notes"]
    fm = note_of(root, done["note"]).frontmatter
    assert fm["taken"] == "2024-05-01T18:30:00"
    assert fm["place"] == "48.86000, -2.35000"
    assert isinstance(reme.llm, VisionLlm)
    prompt = reme.llm.calls[0][1][1]["content"][0]["text"]
    assert "Taken: 2024-05-01T18:30:00" in prompt and "Place (GPS): 48.86000, -2.35000" in prompt


def test_without_a_model_the_image_is_kept_indexed_and_completed_later(root: Path):
    write(root, "resource/inbox/harbour_at-dusk.jpg", jpeg_with_exif())
    with open_workspace(root, llm=None) as reme:
        [done] = reme.run("auto_resource").outputs["notes"]
        note = note_of(root, done["note"])
        assert note.frontmatter["summarised"] is False
        assert note.frontmatter["taken"] == "2024-05-01T18:30:00"
        assert note.name == "harbour at dusk"
        assert "harbour_at-dusk.jpg" in note.frontmatter["description"]
        hits = {h.path for h in reme.search("harbour dusk").hits}
        assert done["note"] in hits
        assert reme.run("auto_resource").outputs["unchanged"] == 1  # nothing to do without one
    with open_workspace(root) as reme:
        second = reme.run("auto_resource").outputs
        assert second["notes"] == [{**done, "action": "updated"}]  # the same note, completed
        completed = note_of(root, done["note"])
        assert completed.frontmatter["summarised"] is True
        assert completed.name == "Lighthouse at dusk"
        assert done["note"] in {h.path for h in reme.search("gulls").hits}
        assert reme.run("auto_resource").outputs["unchanged"] == 1


def test_a_model_not_marked_vision_capable_is_sent_nothing(root: Path):
    write(root, "resource/a.png", png())
    off = "pipelines.auto_resource.steps=[{name: auto_resource, settings: {vision: false}}]"
    with open_workspace(root, off) as reme:
        [done] = reme.run("auto_resource").outputs["notes"]
        assert isinstance(reme.llm, VisionLlm) and reme.llm.calls == []
    assert note_of(root, done["note"]).frontmatter["summarised"] is False


def test_without_a_model_a_text_file_waits_and_an_image_is_still_noted(root: Path):
    write(root, "resource/a.png", png())
    write(root, "resource/b.txt", b"some text\n")
    with open_workspace(root, llm=None) as reme:
        out = reme.run("auto_resource").outputs
    assert [n["resource"] for n in out["notes"]] == ["resource/a.png"]
    assert [p["path"] for p in out["pending"]] == ["resource/b.txt"]
    assert "needs a model" in out["pending"][0]["reason"]


def jpeg() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (8, 8)).save(out, format="JPEG")
    return out.getvalue()


@pytest.mark.parametrize(
    ("name", "data", "setting", "reason"),
    [
        ("lying.png", jpeg(), "", "named .png but its bytes are JPEG data"),
        ("text.webp", b"hello, not an image", "", "not an image (no known image header)"),
        ("cut.png", png()[:60], "", "the image cannot be decoded"),
        ("wide.png", png(size=(400, 300)), "max_image_pixels: 1000", "over the 1000-pixel limit"),
        ("heavy.png", png(), "max_file_bytes: 50", "over the 50-byte limit"),
    ],
)
def test_bad_or_oversized_images_are_refused_and_nothing_is_sent(
    root: Path, name: str, data: bytes, setting: str, reason: str
):
    write(root, f"resource/{name}", data)
    steps = f"pipelines.auto_resource.steps=[{{name: auto_resource, settings: {{vision: true, {setting}}}}}]"
    with open_workspace(root, steps) as reme:
        out = reme.run("auto_resource").outputs
        assert isinstance(reme.llm, VisionLlm) and reme.llm.calls == []
    [skipped] = out["skipped"]
    assert skipped["path"] == f"resource/{name}" and reason in skipped["reason"]
    assert out["notes"] == [] and notes_written(root) == []


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("garbage", "no valid ImageDescription"),
        ("wrong_id", "names image '0000000000000000'"),
        ("wrong_file", "is for 'other.png', not 'a.png'"),
    ],
)
def test_bad_model_output_is_rejected_and_nothing_is_written(
    reme: Reme, root: Path, mode: str, reason: str
):
    write(root, "resource/a.png", png())
    assert isinstance(reme.llm, VisionLlm)
    reme.llm.mode = mode
    out = reme.run("auto_resource").outputs
    [pending] = out["pending"]
    assert pending["path"] == "resource/a.png" and reason in pending["reason"]
    assert out["notes"] == [] and notes_written(root) == []
    reme.llm.mode = "echo"  # the file was left pending: the next run describes it
    assert [n["action"] for n in reme.run("auto_resource").outputs["notes"]] == ["created"]


# -- the openai model against the local OpenAI-compatible test server ----------------------------


class ChatServer(ScriptedServer):
    route = "/v1/chat/completions"
    default_action = ("text", "{}")

    def answer(self, send: Send, body: dict[str, Any], action: tuple[Any, ...]) -> None:
        message = {"role": "assistant", "content": action[1]}
        reply = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
        }
        send(200, json.dumps(reply))


@pytest.fixture
def server() -> Iterator[ChatServer]:
    served = ChatServer()
    yield served
    served.close()


def openai_llm(server: ChatServer) -> str:
    return (
        "components.llm={name: openai, settings: "
        f"{{base_url: '{server.url}', model: vision-model, retry_base_delay: 0}}}}"
    )


def test_the_openai_model_sends_the_image_and_a_wrong_answer_writes_nothing(
    root: Path, server: ChatServer
):
    data = png()
    write(root, "resource/inbox/lighthouse.png", data)
    answer = {
        "image_id": content_hash(data)[:16],
        "file_name": "lighthouse.png",
        "name": "Lighthouse",
        "description": "A lighthouse.",
        "shows": "A lighthouse with a keeper's cottage.",
        "text": "",
    }
    wrong = {**answer, "file_name": "someone-else.png"}
    server.script += [
        ("text", json.dumps(wrong)),
        ("text", "```json\n" + json.dumps(answer) + "\n```"),
    ]
    with open_workspace(root, openai_llm(server), llm=None) as reme:
        first = reme.run("auto_resource").outputs
        assert first["notes"] == [] and notes_written(root) == []
        assert "'someone-else.png', not 'lighthouse.png'" in first["pending"][0]["reason"]
        [done] = reme.run("auto_resource").outputs["notes"]
        assert done["note"] in {h.path for h in reme.search("keeper cottage").hits}
    assert len(server.requests) == 2
    body = server.requests[-1]["body"]
    assert body["model"] == "vision-model"
    parts = body["messages"][-1]["content"]
    [image] = [p for p in parts if p["type"] == "image_url"]
    assert image["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(data).decode()
    assert body["response_format"]["type"] == "json_schema"


# -- end to end: the README's example ------------------------------------------------------------


def test_an_image_dropped_in_the_inbox_becomes_a_searchable_note(root: Path, tmp_path: Path):
    script = tmp_path / "image-script.json"
    subprocess.run([sys.executable, str(EXAMPLE), str(root), str(script)], check=True)
    common = ["-w", str(root), "--set", "timezone=UTC"]
    run = CliRunner().invoke(
        cli,
        [
            "run",
            "auto_resource",
            *common,
            "--set",
            VISION,
            "--set",
            f"components.llm={{name: scripted, settings: {{path: '{script}'}}}}",
            "--json",
        ],
        env=KEYWORD_ONLY_ENV,
    )
    assert run.exit_code == 0, run.output
    [done] = json.loads(run.output)["outputs"]["notes"]
    assert done["resource"] == "resource/inbox/harbour-sign.png"
    for query in ("ferry departure", "harbour-sign"):
        found = CliRunner().invoke(cli, ["search", query, *common, "--json"], env=KEYWORD_ONLY_ENV)
        assert found.exit_code == 0, found.output
        assert done["note"] in [h["path"] for h in json.loads(found.output)["hits"]], query


def test_a_session_image_is_described_with_what_was_said_with_it(reme: Reme, root: Path):
    write(root, "resource/sessions/s1/t1-1.png", png())
    turn = {
        "id": "t1",
        "role": "user",
        "content": "our new logo?\n[image: [[resource/sessions/s1/t1-1.png]]]",
    }
    other = {"id": "t0", "role": "user", "content": "hello"}
    write(root, "sessions/s1.jsonl", (json.dumps(other) + "\n" + json.dumps(turn) + "\n").encode())
    [done] = reme.run("auto_resource").outputs["notes"]
    assert isinstance(reme.llm, VisionLlm)
    prompt = reme.llm.calls[0][1][1]["content"][0]["text"]
    assert "Said with it in the session (user): our new logo?" in prompt
    assert "[image:" not in prompt
    body = note_of(root, done["note"]).body
    assert "> our new logo?" in body and "Turn: [[sessions/s1.jsonl#L2]]" in body
