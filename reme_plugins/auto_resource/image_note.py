"""The resource note of an image: described by a vision model, or kept from what code can read.

With a vision model the note holds what the image shows, the text in it and its EXIF date and
place; without one (none configured, or the step's ``vision`` is off) it is written from the
file name and EXIF alone and marked ``summarised: false``, so a later run with a vision model
rewrites it. Either way it links to the image file, which stays where it was put in resource/.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Any

from reme_core.api import Llm, Prompts
from reme_plugins.auto_resource.images import (
    ImageDescription,
    ImageInfo,
    check_answer,
    data_url,
    image_id,
    inspect,
    vision_messages,
)
from reme_plugins.auto_resource.note import link, provenance_keys
from reme_plugins.auto_resource.session_context import TurnContext

KIND = "image"


def image_keys(
    name: str, description: str, rel: str, digest: str, info: ImageInfo, summarised: bool
) -> dict[str, Any]:
    keys: dict[str, Any] = {
        "name": name,
        "description": description,
        **provenance_keys(rel, digest, KIND),
        "summarised": summarised,
        "image_format": info.format,
        "image_size": info.size,
    }
    if info.taken:
        keys["taken"] = info.taken
    if info.place:
        keys["place"] = info.place
    return keys


class ImageNoteWriter:
    """Builds the owned frontmatter keys and body of one image's note."""

    def __init__(self, prompts: Prompts, max_pixels: int, max_key_points: int):
        self.prompts = prompts
        self.max_pixels = max_pixels
        self.max_key_points = max_key_points
        self.calls = 0

    def inspect(self, rel: str, data: bytes) -> ImageInfo:
        return inspect(rel, data, self.max_pixels)

    def described(
        self,
        llm: Llm,
        rel: str,
        data: bytes,
        digest: str,
        info: ImageInfo,
        context: TurnContext | None = None,
    ) -> tuple[dict[str, Any], str]:
        """Ask ``llm`` (vision-capable) about the image; raises LlmError or ImageAnswerRejected."""
        values = self._values(rel, digest, info)
        details = self._detail_lines(info)
        if context is not None and context.text:
            said = " ".join(context.text.split())
            details.append(self._label("image_context_line", role=context.role, text=said))
        user = self.prompts.render("image_user", details="\n".join(details), **values)
        messages = vision_messages(self.prompts.render("image_system"), user, data_url(info, data))
        self.calls += 1
        answer = check_answer(llm.structured(messages, ImageDescription), rel, digest)
        keys = image_keys(answer.name, answer.description, rel, digest, info, summarised=True)
        lines = [f"# {answer.name}", "", answer.shows, ""]
        if answer.text.strip():
            lines += [f"## {self._label('image_text_heading')}", "", answer.text.strip(), ""]
        points = [p.strip() for p in answer.key_points if p.strip()][: self.max_key_points]
        if points:
            lines += [f"## {self._label('key_points_heading')}", ""]
            lines += [f"- {point}" for point in points] + [""]
        return keys, "\n".join(lines + self._tail(rel, info, context))

    def unsummarised(
        self, rel: str, digest: str, info: ImageInfo, context: TurnContext | None = None
    ) -> tuple[dict[str, Any], str]:
        """The note code can write without a model: file name, EXIF, size, the session turn."""
        values = self._values(rel, digest, info)
        name = _title(rel)
        description = self._label("image_unsummarised_description", **values)
        keys = image_keys(name, description, rel, digest, info, summarised=False)
        lines = [f"# {name}", "", description, "", self._label("image_unsummarised_body"), ""]
        return keys, "\n".join(lines + self._tail(rel, info, context))

    # -- helpers -----------------------------------------------------------------------------

    def _values(self, rel: str, digest: str, info: ImageInfo) -> dict[str, str]:
        return {
            "path": rel,
            "file": PurePosixPath(rel).name,
            "image_id": image_id(digest),
            "format": info.format.upper(),
            "size": info.size,
        }

    def _detail_lines(self, info: ImageInfo) -> list[str]:
        lines = [self._label("image_size_line", format=info.format.upper(), size=info.size)]
        if info.taken:
            lines.append(self._label("image_taken_line", taken=info.taken))
        if info.place:
            lines.append(self._label("image_place_line", place=info.place))
        return lines

    def _tail(self, rel: str, info: ImageInfo, context: TurnContext | None) -> list[str]:
        lines: list[str] = []
        if context is not None:
            lines += [f"## {self._label('image_session_heading')}", ""]
            if context.text:
                lines += [f"> {line}".rstrip() for line in context.text.splitlines()] + [""]
            lines += [self._label("image_turn_line", link=context.link), ""]
        lines += [f"## {self._label('image_details_heading')}", ""]
        lines += [f"- {line}" for line in self._detail_lines(info)] + [""]
        lines += [f"!{link(rel)}", "", self._label("source_line", link=link(rel)), ""]
        return lines

    def _label(self, key: str, **values: str) -> str:
        return self.prompts.render(key, **values).strip()


def _title(rel: str) -> str:
    """A readable title from the file name (``harbour_at-dusk.jpg`` -> ``harbour at dusk``)."""
    stem = PurePosixPath(rel).stem
    return " ".join(re.split(r"[\s_\-.]+", stem)).strip() or PurePosixPath(rel).name
