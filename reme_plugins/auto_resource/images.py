"""Image resources: checking the bytes, reading EXIF, and what a vision model must answer.

An image is refused (``ResourceSkipped``) before anything is written or sent when its bytes are
not the format its suffix names, when Pillow cannot decode it, or when it has more pixels than
the step allows. EXIF gives the date it was taken and the place (GPS) when present. The model's
answer must echo the image id and file name it was sent, so a description written for another
file (a mixed-up batch, a cached answer) is rejected by code, not trusted.
"""

from __future__ import annotations

import base64
import datetime as dt
import io
import warnings
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from reme_plugins.auto_resource.readers import ResourceSkipped
from reme_plugins.auto_resource.summarise import MAX_NAME_CHARS

IMAGE_SUFFIXES = {".png": "png", ".jpg": "jpeg", ".jpeg": "jpeg", ".webp": "webp", ".gif": "gif"}
"""Suffix -> the format its bytes must be."""
_MIME = {"png": "image/png", "jpeg": "image/jpeg", "webp": "image/webp", "gif": "image/gif"}
IMAGE_ID_CHARS = 16
"""How much of the content hash the model is given to echo back."""

# EXIF tags (numbers from the EXIF 2.32 specification).
_EXIF_IFD, _GPS_IFD = 0x8769, 0x8825
_DATETIME, _DATETIME_ORIGINAL = 0x0132, 0x9003
_GPS_LAT_REF, _GPS_LAT, _GPS_LON_REF, _GPS_LON = 1, 2, 3, 4


def is_image(rel: str) -> bool:
    return PurePosixPath(rel).suffix.lower() in IMAGE_SUFFIXES


def image_id(digest: str) -> str:
    return digest[:IMAGE_ID_CHARS]


@dataclass(frozen=True)
class ImageInfo:
    format: str
    width: int
    height: int
    taken: str | None
    """EXIF DateTimeOriginal (else DateTime) as ISO 8601, when present and valid."""
    place: str | None
    """EXIF GPS position as ``lat, lon`` in decimal degrees, when present."""

    @property
    def mime(self) -> str:
        return _MIME[self.format]

    @property
    def size(self) -> str:
        return f"{self.width}x{self.height}"


def sniff(data: bytes) -> str | None:
    """The image format the bytes start with, whatever the file is called."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if data.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    return None


def inspect(rel: str, data: bytes, max_pixels: int) -> ImageInfo:
    """Check that ``data`` is a decodable image of the format ``rel``'s suffix names."""
    expected = IMAGE_SUFFIXES[PurePosixPath(rel).suffix.lower()]
    if not data:
        raise ResourceSkipped("the file is empty")
    found = sniff(data)
    if found != expected:
        what = f"{found.upper()} data" if found else "not an image (no known image header)"
        raise ResourceSkipped(f"the file is named .{expected} but its bytes are {what}")
    try:
        from PIL import Image, UnidentifiedImageError
    except ImportError:
        raise ResourceSkipped("reading images needs Pillow: pip install pillow") from None
    try:
        with warnings.catch_warnings():
            # Our own pixel limit decides, before any decoding; Pillow's warning is noise here.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as image:
                width, height = image.size
                if width * height > max_pixels:
                    raise ResourceSkipped(
                        f"the image is {width}x{height} ({width * height} pixels), over the "
                        f"{max_pixels}-pixel limit (the step's max_image_pixels)"
                    )
                image.load()  # a truncated or corrupt file fails here, not in the model
                exif = image.getexif()
    except ResourceSkipped:
        raise
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, EOFError) as exc:
        raise ResourceSkipped(f"the image cannot be decoded: {exc}") from None
    except Image.DecompressionBombError as exc:
        raise ResourceSkipped(f"the image is too large to decode: {exc}") from None
    return ImageInfo(expected, width, height, _taken(exif), _place(exif))


def data_url(info: ImageInfo, data: bytes) -> str:
    return f"data:{info.mime};base64,{base64.b64encode(data).decode('ascii')}"


def vision_messages(system: str, user: str, url: str) -> list[dict[str, Any]]:
    """OpenAI-compatible chat messages carrying the image as an ``image_url`` content part."""
    return [
        {"role": "system", "content": system},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": user},
                {"type": "image_url", "image_url": {"url": url}},
            ],
        },
    ]


class ImageDescription(BaseModel):
    """What a vision model says about one image."""

    model_config = ConfigDict(str_strip_whitespace=True)

    image_id: str = Field(min_length=1)
    """Echo of the id sent with the image: proves the answer is about this file."""
    file_name: str = Field(min_length=1)
    name: str = Field(min_length=1)
    description: str = Field(min_length=1)
    shows: str = Field(min_length=1)
    """What the image shows, a few sentences."""
    text: str = ""
    """Text visible in the image, as written; empty when there is none."""
    key_points: list[str] = Field(default_factory=list)

    @field_validator("name", "description")
    @classmethod
    def _one_line(cls, value: str) -> str:
        return " ".join(value.split())

    @field_validator("name")
    @classmethod
    def _short_name(cls, value: str) -> str:
        return value if len(value) <= MAX_NAME_CHARS else value[: MAX_NAME_CHARS - 3] + "..."


class ImageAnswerRejected(ResourceSkipped):
    """The model described something other than the image it was sent."""


def check_answer(answer: ImageDescription, rel: str, digest: str) -> ImageDescription:
    """``answer`` if it echoes this image's id and file name, else ``ImageAnswerRejected``."""
    expected_name = PurePosixPath(rel).name
    if answer.image_id.lower() != image_id(digest):
        raise ImageAnswerRejected(
            f"the model's description names image {answer.image_id!r}, not {image_id(digest)!r} "
            f"({expected_name}); nothing was written"
        )
    if answer.file_name != expected_name:
        raise ImageAnswerRejected(
            f"the model's description is for {answer.file_name!r}, not {expected_name!r}; "
            "nothing was written"
        )
    return answer


def _taken(exif: Any) -> str | None:
    raw = exif.get_ifd(_EXIF_IFD).get(_DATETIME_ORIGINAL) or exif.get(_DATETIME)
    if not isinstance(raw, str):
        return None
    try:
        return dt.datetime.strptime(raw.strip("\0 "), "%Y:%m:%d %H:%M:%S").isoformat()
    except ValueError:
        return None  # cameras without a set clock write zeros or blanks


def _place(exif: Any) -> str | None:
    gps = exif.get_ifd(_GPS_IFD)
    lat, lon = _degrees(gps.get(_GPS_LAT)), _degrees(gps.get(_GPS_LON))
    if lat is None or lon is None:
        return None
    if str(gps.get(_GPS_LAT_REF, "N")).upper().startswith("S"):
        lat = -lat
    if str(gps.get(_GPS_LON_REF, "E")).upper().startswith("W"):
        lon = -lon
    if not (-90 <= lat <= 90 and -180 <= lon <= 180):
        return None
    return f"{lat:.5f}, {lon:.5f}"


def _degrees(value: Any) -> float | None:
    try:
        d, m, s = (float(part) for part in value)
    except (TypeError, ValueError, ZeroDivisionError):
        return None
    return d + m / 60 + s / 3600
