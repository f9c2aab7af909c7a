"""YAML frontmatter: find the block, parse it, and edit single keys without disturbing the rest."""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import frontmatter as pyfrontmatter
import yaml
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError as RuamelYAMLError
from ruamel.yaml.scalarstring import SingleQuotedScalarString

from reme_core.errors import FrontmatterError

_OPEN = re.compile(r"\A(\ufeff)?---[ \t]*(\r?\n)")
_CLOSE = re.compile(r"(---|\.\.\.)[ \t]*\r?\n?\Z")


@dataclass(frozen=True)
class FrontmatterBlock:
    """Where the frontmatter sits in a text. Offsets are string indexes, lines are 1-based."""

    yaml_text: str
    yaml_start: int
    """Offset of the first YAML character (just after the opening ``---`` line)."""
    yaml_end: int
    """Offset of the closing ``---`` line."""
    body_start: int
    """Offset of the first body character."""
    body_start_line: int
    newline: str


def split_frontmatter(text: str, path: str = "<text>") -> FrontmatterBlock | None:
    """Locate the frontmatter block; None when the text has none. Unclosed -> FrontmatterError."""
    opened = _OPEN.match(text)
    if opened is None:
        return None
    pos = opened.end()
    line_no = 2
    while pos < len(text):
        nl = text.find("\n", pos)
        end = len(text) if nl == -1 else nl + 1
        if _CLOSE.match(text[pos:end]):
            return FrontmatterBlock(
                yaml_text=text[opened.end() : pos],
                yaml_start=opened.end(),
                yaml_end=pos,
                body_start=end,
                body_start_line=line_no + 1,
                newline=opened.group(2),
            )
        pos = end
        line_no += 1
    raise FrontmatterError(
        f"{path}: frontmatter opened with '---' on line 1 is never closed; "
        "add a closing '---' line (or remove the opening one)"
    )


def parse_frontmatter(text: str, path: str = "<text>") -> tuple[dict[str, Any], int]:
    """Return ``(frontmatter mapping, body start line)``; malformed YAML -> FrontmatterError."""
    block = split_frontmatter(text, path)
    if block is None:
        return {}, 1
    try:
        data = pyfrontmatter.YAMLHandler().load(block.yaml_text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 2 if mark is not None else 2  # +1 for 1-based, +1 for the '---' line
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise FrontmatterError(
            f"{path}: invalid YAML frontmatter at line {line}: {problem}"
        ) from exc
    if data is None:
        return {}, block.body_start_line
    if not isinstance(data, dict):
        raise FrontmatterError(
            f"{path}: frontmatter at line 2 must be a mapping of keys to values, "
            f"not a {type(data).__name__}"
        )
    return {str(k): v for k, v in data.items()}, block.body_start_line


def dump_note(frontmatter: dict[str, Any], body: str) -> str:
    """Render a new note from a mapping and a body (keys keep the order given)."""
    if not frontmatter:
        return body
    post = pyfrontmatter.Post(body, **frontmatter)
    text = pyfrontmatter.dumps(post, sort_keys=False, allow_unicode=True)
    # python-frontmatter strips the body; keep it exactly as given instead.
    head = text[: text.index("\n---", 3) + 4] + "\n"
    return head + body


def _dump_entries(values: dict[str, Any], newline: str) -> str:
    # PyYAML is what reads frontmatter back (YAML 1.1), so it also writes new values: a string
    # such as "yes" gets quoted and keeps meaning a string on the next read.
    try:
        text = yaml.safe_dump(
            values, sort_keys=False, allow_unicode=True, default_flow_style=False, width=10_000
        )
    except yaml.YAMLError as exc:
        raise FrontmatterError(
            f"cannot write frontmatter keys {', '.join(map(str, values))}: values must be "
            "strings, numbers, booleans, dates, null, or lists and mappings of those"
        ) from exc
    return text.replace("\n", newline) if newline != "\n" else text


def _roundtrip_load(yaml_text: str, path: str) -> Any:
    rt = YAML(typ="rt")
    rt.preserve_quotes = True
    try:
        return rt.load(yaml_text)
    except RuamelYAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 2 if mark is not None else 2
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise FrontmatterError(
            f"{path}: invalid YAML frontmatter at line {line}: {problem}"
        ) from exc


def update_frontmatter(
    text: str,
    set: dict[str, Any],  # the public name the tools and API use
    remove: Sequence[str] = (),
    *,
    path: str = "<text>",
) -> str:
    """Set and remove top-level keys; every other byte of the note stays as written."""
    block = split_frontmatter(text, path)
    if block is None:
        if not set:
            return text
        newline = "\r\n" if "\r\n" in text[:1000] else "\n"
        return f"---{newline}{_dump_entries(dict(set), newline)}---{newline}{text}"

    parse_frontmatter(text, path)  # the reader's view must be valid too, not only ruamel's
    data = _roundtrip_load(block.yaml_text, path)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise FrontmatterError(f"{path}: frontmatter at line 2 must be a mapping")

    lines = block.yaml_text.splitlines(keepends=True)
    key_lines = _key_lines(data)
    if key_lines is None:
        new_yaml = _rewrite_whole(data, set, remove)
    else:
        new_yaml = _splice(lines, key_lines, set, remove, block.newline)
    return text[: block.yaml_start] + new_yaml + text[block.yaml_end :]


def _key_lines(data: Any) -> dict[str, int] | None:
    """Line of each top-level key, or None when keys share lines (flow style) and can't be split."""
    if not data:
        return {}
    if getattr(data, "fa", None) is not None and data.fa.flow_style():
        return None
    out: dict[str, int] = {}
    for key in data:
        out[str(key)] = data.lc.key(key)[0]
    if len(set(out.values())) != len(out):
        return None
    return out


def _splice(
    lines: list[str],
    key_lines: dict[str, int],
    set_: dict[str, Any],
    remove: Sequence[str],
    newline: str,
) -> str:
    ordered = sorted(key_lines.items(), key=lambda kv: kv[1])
    spans: dict[str, tuple[int, int]] = {}
    for i, (key, start) in enumerate(ordered):
        end = ordered[i + 1][1] if i + 1 < len(ordered) else len(lines)
        # Blank lines and top-level comments after a value belong to what follows, so they stay.
        while end > start + 1 and (lines[end - 1].strip() == "" or lines[end - 1].startswith("#")):
            end -= 1
        spans[key] = (start, end)

    replacement: dict[int, str] = {}
    dropped: set[int] = set()
    appended: dict[str, Any] = {}
    for key, value in set_.items():
        if key in spans:
            start, end = spans[key]
            replacement[start] = _dump_entries({key: value}, newline)
            dropped.update(range(start + 1, end))
        else:
            appended[key] = value
    for key in remove:
        if key in spans and key not in set_:
            start, end = spans[key]
            dropped.update(range(start, end))

    out: list[str] = []
    for i, line in enumerate(lines):
        if i in replacement:
            out.append(replacement[i])
        elif i not in dropped:
            out.append(line)
    if out and not out[-1].endswith("\n"):
        out[-1] += newline
    if appended:
        out.append(_dump_entries(appended, newline))
    return "".join(out)


_RESOLVER = yaml.resolver.Resolver()


def _quote_ambiguous(value: Any) -> Any:
    """Quote strings a YAML 1.1 reader would take for another type ("yes", "0123")."""
    if isinstance(value, str):
        tag = _RESOLVER.resolve(yaml.ScalarNode, value, (True, False))
        return SingleQuotedScalarString(value) if tag != "tag:yaml.org,2002:str" else value
    if isinstance(value, list):
        return [_quote_ambiguous(v) for v in value]
    if isinstance(value, dict):
        return {k: _quote_ambiguous(v) for k, v in value.items()}
    return value


def _rewrite_whole(data: Any, set_: dict[str, Any], remove: Sequence[str]) -> str:
    # Flow-style mappings keep several keys on one line; ruamel's round trip re-emits them.
    for key in remove:
        if key in data and key not in set_:
            del data[key]
    for key, value in set_.items():
        data[key] = _quote_ambiguous(value)
    rt = YAML(typ="rt")
    rt.preserve_quotes = True
    rt.width = 10_000
    buf = io.StringIO()
    try:
        rt.dump(data, buf)
    except RuamelYAMLError as exc:
        raise FrontmatterError(f"cannot write frontmatter: {exc}") from exc
    return buf.getvalue()
