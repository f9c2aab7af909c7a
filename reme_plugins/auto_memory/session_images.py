"""Images pasted into an agent session: saved under ``resource/``, linked from the turn and note.

A Claude Code line carries an image as a content block ``{"type": "image", "source": {"type":
"base64", "media_type": "image/png", "data": ...}}``; a Codex rollout as a part ``{"type":
"input_image", "image_url": "data:image/png;base64,..."}``. Each is written once to
``resource/sessions/<session_id>/<turn id>-<n>.<ext>`` (where auto_resource then makes it a
resource note, described when a vision model is configured), and the turn's saved text gains a
line ``[image: [[resource/...]]]``, so a turn that was only an image is kept, and the session's
daily note lists it in its timeline with a link back to that turn.

Only bytes that are really an image of the named type are saved (a block whose data is not
base64, or whose bytes are another format, becomes ``[image omitted: ...]``); nothing here sends
an image anywhere.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import hashlib
import os
import re
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from reme_plugins.auto_memory.note import anchor
from reme_plugins.auto_memory.transcript import Entry

FOLDER = "resource/sessions"
MAX_IMAGE_BYTES = 20 * 1024 * 1024
"""As auto_resource's max_file_bytes: a larger image would only be refused there."""
_EXT = {"image/png": "png", "image/jpeg": "jpg", "image/webp": "webp", "image/gif": "gif"}
_MAGIC = {
    "png": (b"\x89PNG\r\n\x1a\n",),
    "jpg": (b"\xff\xd8\xff",),
    "gif": (b"GIF87a", b"GIF89a"),
    "webp": (b"RIFF",),
}
_DATA_URL = re.compile(r"data:(image/[a-z+.\-]+);base64,(.*)", re.DOTALL)
_MARKER = re.compile(r"\[image: (\[\[(resource/sessions/[^\]|#]+)\]\])\]")
_SAFE = re.compile(r"[^A-Za-z0-9_\-]")


class SessionImage:
    """One decoded image of a turn, or why it was left out."""

    def __init__(self, media_type: str, data: bytes | None, problem: str | None = None):
        self.media_type = media_type
        self.data = data
        self.problem = problem


def claude_images(content: Any) -> list[SessionImage]:
    """The base64 ``image`` blocks of a Claude Code message's content, in order."""
    found: list[SessionImage] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict) or block.get("type") != "image":
            continue
        source = block.get("source") if isinstance(block.get("source"), dict) else {}
        if source.get("type") != "base64":
            found.append(SessionImage("", None, "not inline (a URL or file reference)"))
            continue
        found.append(_decoded(str(source.get("media_type") or ""), source.get("data")))
    return found


def codex_images(content: Any) -> list[SessionImage]:
    """The ``input_image`` parts (data URLs) of a Codex message's content, in order."""
    found: list[SessionImage] = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict) or part.get("type") != "input_image":
            continue
        url = part.get("image_url")
        match = _DATA_URL.fullmatch(url.strip()) if isinstance(url, str) else None
        if match is None:
            found.append(SessionImage("", None, "not inline (a URL or file reference)"))
            continue
        found.append(_decoded(match.group(1), match.group(2)))
    return found


def image_paths(session_id: str, turn_id: str, images: list[SessionImage]) -> list[str | None]:
    """Where each image of a turn is kept (None for one left out); the same on every run."""
    turn = _SAFE.sub("-", turn_id)[:80] or hashlib.sha256(turn_id.encode()).hexdigest()[:16]
    paths: list[str | None] = []
    for n, image in enumerate(images, start=1):
        ext = _EXT.get(image.media_type)
        paths.append(f"{FOLDER}/{session_id}/{turn}-{n}.{ext}" if image.data and ext else None)
    return paths


def markers(images: list[SessionImage], paths: list[str | None]) -> str:
    """The lines added to the turn's text: a link per saved image, a reason per omitted one."""
    lines = []
    for image, path in zip(images, paths, strict=True):
        lines.append(f"[image: [[{path}]]]" if path else f"[image omitted: {image.problem}]")
    return "\n".join(lines)


def save(root: Path, images: list[SessionImage], paths: list[str | None]) -> list[str]:
    """Write the images not already on disk with these bytes; returns the paths written."""
    written = []
    for image, path in zip(images, paths, strict=True):
        if path is None or image.data is None:
            continue
        target = root / path
        if target.is_file() and target.read_bytes() == image.data:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        # Written whole or not at all: auto_resource may be reading resource/ at the same time.
        # A dot name and no image suffix: neither the index nor auto_resource picks it up.
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=".part")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(image.data)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        written.append(path)
    return written


def image_items(batch: Iterable[Entry], source: str, tz: dt.tzinfo) -> list[str]:
    """Timeline lines for the images in ``batch``'s turns, each linking back to its turn."""
    items = []
    for entry in batch:
        for link, _ in _MARKER.findall(entry.content):
            time = f"{entry.timestamp.astimezone(tz):%H:%M} " if entry.timestamp else ""
            items.append(f"- {time}{entry.role} image !{link} ({anchor(source, entry.line)})\n")
    return items


def _decoded(media_type: str, data: Any) -> SessionImage:
    ext = _EXT.get(media_type)
    if ext is None:
        return SessionImage(media_type, None, f"type {media_type or '(none)'} is not kept")
    if not isinstance(data, str):
        return SessionImage(media_type, None, "no data")
    if len(data) > MAX_IMAGE_BYTES * 4 // 3 + 4:
        return SessionImage(media_type, None, f"over {MAX_IMAGE_BYTES} bytes")
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return SessionImage(media_type, None, "the data is not base64")
    if not raw.startswith(_MAGIC[ext]):
        return SessionImage(media_type, None, f"the bytes are not {media_type}")
    return SessionImage(media_type, raw)
