"""A context line for every chunk of a note, from its frontmatter (contextual chunks).

A conversation turn kept as a note ("yes, in May!") says neither when it was said nor, often, who
it is about; the note's frontmatter does. With ``context_keys: [date]`` the markdown chunker puts
``Monday 8 May 2023`` above each chunk, so both arms index the day in words a question uses ("in
May 2023", "on a Monday"). The line is indexed text only: the note itself is not changed.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

import yaml

_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def frontmatter_fields(lines: Sequence[str]) -> dict[str, Any]:
    """The frontmatter mapping of a note's lines; empty when there is none or it is not YAML."""
    if not lines or lines[0].rstrip() != "---":
        return {}
    for i in range(1, len(lines)):
        if lines[i].rstrip() in ("---", "..."):
            try:
                data = yaml.load("\n".join(lines[1:i]), Loader=_YAML_LOADER)
            except Exception:  # a bad frontmatter must not stop indexing; the catalog reports it
                return {}
            return data if isinstance(data, dict) else {}
    return {}


def render_value(value: Any) -> str:
    """A frontmatter value as words: days as ``Monday 8 May 2023``, lists joined by commas."""
    if isinstance(value, dt.datetime):
        value = value.date()
    if isinstance(value, dt.date):
        return f"{value.strftime('%A')} {value.day} {value.strftime('%B %Y')}"
    if isinstance(value, str):
        try:
            return render_value(dt.date.fromisoformat(value.strip()))
        except ValueError:
            return " ".join(value.split())
    if isinstance(value, list):
        return ", ".join(r for r in (render_value(v) for v in value) if r)
    if value is None or isinstance(value, bool | dict):
        return ""  # a flag or a mapping reads as nothing useful in a sentence
    return str(value)


def context_line(fields: dict[str, Any], keys: Sequence[str]) -> str:
    """The rendered values of ``keys`` present in ``fields``, in the order of ``keys``."""
    parts = [render_value(fields[key]) for key in keys if key in fields]
    return ", ".join(p for p in parts if p)
