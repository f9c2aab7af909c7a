"""Text extraction per resource file type.

A reader turns a file's bytes into ``sections``: the file's natural units (a PDF page, a CSV row,
a JSONL line, a top-level JSON entry) in order, so a large file can be cut into parts at those
boundaries. Anything that cannot become useful text raises ``ResourceSkipped`` with a reason a
user can act on; nothing here touches the workspace.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import yaml

from reme_core.api import RemeError

BINARY_SNIFF_BYTES = 8192


class ResourceSkipped(RemeError):
    """The file cannot be read as a resource; the message says why."""


@dataclass(frozen=True)
class ResourceText:
    kind: str
    """The reader used (``pdf``, ``csv``, ...), shown to the model."""
    sections: list[str]
    """Non-empty text units in file order."""

    @property
    def text(self) -> str:
        return "\n\n".join(self.sections)


def read_resource(rel: str, data: bytes) -> ResourceText:
    """Extract the text of resource ``rel`` from its bytes, or raise ``ResourceSkipped``."""
    suffix = PurePosixPath(rel).suffix.lower()
    reader = READERS.get(suffix)
    if reader is None:
        known = ", ".join(sorted(READERS))
        binary = " and looks binary (NUL bytes)" if b"\0" in data[:BINARY_SNIFF_BYTES] else ""
        raise ResourceSkipped(
            f"unsupported file type {suffix or '(no suffix)'!r}{binary}; reads {known}"
        )
    if not data.strip():
        raise ResourceSkipped("the file is empty")
    kind, read = reader
    sections = [s for s in (part.strip() for part in read(data)) if s]
    if not sections:
        raise ResourceSkipped("no text in the file")
    return ResourceText(kind=kind, sections=sections)


def _decode(data: bytes) -> str:
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        raise ResourceSkipped("the file looks binary (NUL bytes), not text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ResourceSkipped(
            f"the file is not valid UTF-8 text (undecodable byte at offset {exc.start})"
        ) from None


def _plain(data: bytes) -> list[str]:
    # Paragraphs are the natural cut points of prose; the splitter cuts further by lines.
    return _decode(data).replace("\r\n", "\n").split("\n\n")


def _json(data: bytes) -> list[str]:
    text = _decode(data)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResourceSkipped(
            f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    return [_structure(value), *_entries(value)]


def _jsonl(data: bytes) -> list[str]:
    sections: list[str] = []
    for number, line in enumerate(_decode(data).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            shown = json.dumps(json.loads(line), ensure_ascii=False)
        except json.JSONDecodeError:
            shown = line  # a malformed line is still text worth reading
        sections.append(f"line {number}: {shown}")
    return sections


def _csv(data: bytes) -> list[str]:
    text = _decode(data)
    try:
        rows = [row for row in csv.reader(io.StringIO(text)) if any(cell.strip() for cell in row)]
    except csv.Error as exc:
        raise ResourceSkipped(f"not valid CSV: {exc}") from None
    if not rows:
        return []
    header, body = rows[0], rows[1:]
    # Each row names its columns, so any part of a split file still makes sense on its own.
    sections = [f"CSV with {len(body)} row(s); columns: {', '.join(header)}"]
    for number, row in enumerate(body, start=1):
        cells = [
            f"{header[i] if i < len(header) else f'column {i + 1}'}: {cell}"
            for i, cell in enumerate(row)
            if cell.strip()
        ]
        sections.append(f"row {number}: " + "; ".join(cells))
    return sections


def _yaml(data: bytes) -> list[str]:
    text = _decode(data)
    try:
        documents = [doc for doc in yaml.safe_load_all(text) if doc is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ResourceSkipped(f"not valid YAML{where}: {problem}") from None
    sections: list[str] = []
    for value in documents:
        sections.append(_structure(value))
        sections += [_dump_yaml(v) if not isinstance(v, str) else v for v in _items(value)]
    return sections


def _html(data: bytes) -> list[str]:
    import html2text  # imported here: only HTML resources need it

    converter = html2text.HTML2Text()
    converter.body_width = 0  # keep paragraphs on one line; the splitter decides where to cut
    converter.ignore_images = True
    return converter.handle(_decode(data)).split("\n\n")


def _pdf(data: bytes) -> list[str]:
    from pypdf import PdfReader  # imported here: only PDF resources need it
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise ResourceSkipped("the PDF is encrypted; save an unprotected copy")
        pages = [page.extract_text() or "" for page in reader.pages]
    except ResourceSkipped:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError) as exc:
        raise ResourceSkipped(f"the PDF cannot be read: {exc}") from None
    sections = [f"[page {n}]\n{text.strip()}" for n, text in enumerate(pages, 1) if text.strip()]
    if not sections:
        raise ResourceSkipped(f"the PDF has no extractable text ({len(pages)} page(s), scanned?)")
    return sections


def _structure(value: Any) -> str:
    """One line describing the shape, so the model knows what the entries belong to."""
    if isinstance(value, dict):
        keys = ", ".join(str(k) for k in list(value)[:50])
        more = f" (+{len(value) - 50} more)" if len(value) > 50 else ""
        return f"object with {len(value)} key(s): {keys}{more}"
    if isinstance(value, list):
        return f"array of {len(value)} item(s)"
    return f"a single {type(value).__name__} value"


def _items(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [{key: item} for key, item in value.items()]
    if isinstance(value, list):
        return list(value)
    return [value]


def _entries(value: Any) -> list[str]:
    return [json.dumps(item, indent=2, ensure_ascii=False) for item in _items(value)]


def _dump_yaml(value: Any) -> str:
    return yaml.safe_dump(value, sort_keys=False, allow_unicode=True, default_flow_style=False)


READERS: dict[str, tuple[str, Callable[[bytes], list[str]]]] = {
    ".md": ("markdown", _plain),
    ".markdown": ("markdown", _plain),
    ".txt": ("text", _plain),
    ".json": ("json", _json),
    ".jsonl": ("jsonl", _jsonl),
    ".csv": ("csv", _csv),
    ".yaml": ("yaml", _yaml),
    ".yml": ("yaml", _yaml),
    ".html": ("html", _html),
    ".htm": ("html", _html),
    ".pdf": ("pdf", _pdf),
}
"""Suffix -> (kind, reader)."""
