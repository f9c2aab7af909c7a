"""Images pasted into an agent session: saved under ``resource/``, linked from the turn and note.

A Claude Code line carries an image as a content block ``{"type": "image", "source": {"type":
"base64", "media_type": "image/png", "data": ...}}``; a Codex rollout as a part ``{"type":
"input_image", "image_url": "data:image/png;base64,..."}``. Each is written once to
``resource/sessions/<session_id>/<turn id>-<n>.<ext>`` (where auto_resource then makes it a
resource note, described when a vision model is configured), and the turn's saved text gains a
line ``[image: [[resource/...]]]``, so a turn that was only an image is kept, and the session's
daily note lists it in its timeline with a link back to that turn.

Images a tool returned are kept the same way: a Claude Code ``tool_result`` block holding
``image`` blocks (its Read tool on a png, an MCP tool's image), a Codex ``function_call_output``
or ``custom_tool_call_output`` whose output is a list of parts with ``input_image`` ones (its
view_image tool, an MCP tool's image). The tool result becomes a turn of role ``tool``
(``Read /path/chart.png returned:`` and the image lines), right after the turn that called it.

Only bytes that are really an image of the named type are saved (a block whose data is not
base64, or whose bytes are another format, becomes ``[image omitted: ...]``, and the step reports
it); an image already kept for the session (the same sha256) is linked where it is, not written
again. Nothing here sends an image anywhere.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterable, Mapping
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
_CALL_ARGS = ("file_path", "path", "url", "uri")
"""The argument that names what a tool call looked at, shown beside its name."""
MAX_CALL_CHARS = 200
CODEX_OUTPUTS = ("function_call_output", "custom_tool_call_output")


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


def claude_tool_images(content: Any) -> list[tuple[str, list[SessionImage]]]:
    """``(tool_use_id, its images)`` for each ``tool_result`` block of a Claude Code message
    that holds ``image`` blocks, in order."""
    found = []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            images = claude_images(block.get("content"))
            if images:
                found.append((str(block.get("tool_use_id") or ""), images))
    return found


def codex_tool_images(item: Any) -> list[SessionImage]:
    """The ``input_image`` parts of a Codex tool output item (its output as a list of parts)."""
    if not isinstance(item, dict) or item.get("type") not in CODEX_OUTPUTS:
        return []
    return codex_images(item.get("output"))


def claude_calls(obj: Any) -> dict[str, str]:
    """``tool_use id -> "Name what"`` for the tool calls of a Claude Code assistant line."""
    message = obj.get("message") if isinstance(obj, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    calls = {}
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("id"):
            calls[str(block["id"])] = _call_label(block.get("name"), block.get("input"))
    return calls


def codex_calls(item: Any) -> dict[str, str]:
    """``call_id -> "name what"`` for a Codex ``function_call`` or ``custom_tool_call`` item."""
    if not isinstance(item, dict) or item.get("type") not in ("function_call", "custom_tool_call"):
        return {}
    if not item.get("call_id"):
        return {}
    args = item.get("arguments", item.get("input"))
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            args = None
    return {str(item["call_id"]): _call_label(item.get("name"), args)}


def tool_text(label: str | None, images: list[SessionImage], paths: list[str | None]) -> str:
    """The lines a tool result's images add to its turn: which call, then a line per image."""
    return f"{label or 'A tool call'} returned:\n{markers(images, paths)}"


def _call_label(name: Any, args: Any) -> str:
    label = str(name or "a tool")[:80]
    if isinstance(args, Mapping):
        what = next((args[k] for k in _CALL_ARGS if isinstance(args.get(k), str)), None)
        if what:
            label += f" {' '.join(what.split())[:MAX_CALL_CHARS]}"
    return label


class Shelf:
    """Where one session's images are kept, ``resource/sessions/<session_id>/``: each distinct
    image once (one already there, by sha256, is linked where it is), and what was left out."""

    def __init__(self, root: Path, session_id: str):
        self.root = root
        self.session_id = session_id
        self.saved: list[str] = []
        """Files written by this run."""
        self.linked = 0
        """Images of the turns kept by this run that are on disk (written now or before)."""
        self.omitted: list[tuple[str, str]] = []
        """``(turn id, why)`` for each image of a kept turn that was left out."""
        self._known: dict[str, str] | None = None

    def paths(self, turn_id: str, images: list[SessionImage]) -> list[str | None]:
        """Where each image of a turn is kept (None for one left out); the same until a turn
        with those bytes is kept, then that turn's file."""
        own = image_paths(self.session_id, turn_id, images)
        if not any(own):
            return own
        known = self._index()
        here: dict[str, str] = {}
        found: list[str | None] = []
        for image, path in zip(images, own, strict=True):
            if path is None or image.data is None:
                found.append(None)
                continue
            digest = hashlib.sha256(image.data).hexdigest()
            found.append(known.get(digest) or here.setdefault(digest, path))
        return found

    def keep(self, turn_id: str, images: list[SessionImage]) -> None:
        """Write the images of a turn about to be saved and note what was left out."""
        paths = self.paths(turn_id, images)
        self.saved += save(self.root, images, paths)
        for image, path in zip(images, paths, strict=True):
            if path is None or image.data is None:
                self.omitted.append((turn_id, image.problem or "left out"))
                continue
            self.linked += 1
            self._index().setdefault(hashlib.sha256(image.data).hexdigest(), path)

    def report(self) -> dict[str, Any] | None:
        """The step's ``images`` output (None when no kept turn had an image)."""
        if not self.linked and not self.omitted:
            return None
        out: dict[str, Any] = {
            "saved": len(self.saved),
            "linked": self.linked,
            "omitted": len(self.omitted),
        }
        if self.omitted:
            turn, why = self.omitted[0]
            out["first_omitted"] = f"turn {turn}: {why}"
        return out

    def _index(self) -> dict[str, str]:
        """sha256 -> path of the images already kept for this session."""
        if self._known is None:
            self._known = {}
            folder = self.root / FOLDER / self.session_id
            for path in sorted(folder.iterdir()) if folder.is_dir() else []:
                if path.name.startswith(".") or not path.is_file():
                    continue  # a .tmp- file still being written
                if path.stat().st_size > MAX_IMAGE_BYTES:
                    continue
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                self._known.setdefault(digest, f"{FOLDER}/{self.session_id}/{path.name}")
        return self._known


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


def names_images(text: str) -> bool:
    """Whether a saved turn's text links a kept session image."""
    return _MARKER.search(text) is not None


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
