"""Validation errors turned into one line per bad key: dotted path, problem, and the layer it came from.

Shared by settings and component-settings validation, so a typo anywhere reads the same way:
``search.limt: unknown key (did you mean 'limit'?) [from env REME_SEARCH__LIMT]``.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from types import NoneType, UnionType
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

KeyPath = tuple[str | int, ...]


def dotted(loc: Sequence[str | int]) -> str:
    """Format a key path: ``components.chunkers[.md].name``, ``search.statuses[1]``."""
    out = ""
    for part in loc:
        if isinstance(part, int) or "." in str(part) or not str(part):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def describe(
    exc: ValidationError, model: type[BaseModel], prefix: KeyPath, origin: Mapping[KeyPath, str]
) -> str:
    lines = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        path = dotted((*prefix, *loc))
        if err["type"] == "extra_forbidden":
            problem = "unknown key" + suggest(model, loc)
        elif err["type"] == "missing":
            problem = "required key is missing"
        else:
            msg = err["msg"].removeprefix("Value error, ")
            got = _short(err.get("input"))
            problem = msg if got in msg else f"{msg} (got {got})"
        source = source_of(loc, origin)
        lines.append(f"{path}: {problem}" + (f" [from {source}]" if source else ""))
    if len(lines) == 1:
        return lines[0]
    return "invalid configuration:\n  " + "\n  ".join(lines)


def suggest(model: type[BaseModel], loc: KeyPath) -> str:
    parent = _model_at(model, loc[:-1])
    if parent is None:
        return ""
    names = list(parent.model_fields)
    close = difflib.get_close_matches(str(loc[-1]), names, n=1)
    if close:
        return f" (did you mean {close[0]!r}?)"
    return f" (known keys: {', '.join(names)})"


def _model_at(model: type[BaseModel], loc: KeyPath) -> type[BaseModel] | None:
    tp: Any = model
    for part in loc:
        tp = _unwrap_optional(tp)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            field = tp.model_fields.get(str(part))
            if field is None:
                return None
            tp = field.annotation
        elif get_origin(tp) is dict:
            tp = get_args(tp)[1]
        else:
            return None
    tp = _unwrap_optional(tp)
    return tp if isinstance(tp, type) and issubclass(tp, BaseModel) else None


def _unwrap_optional(tp: Any) -> Any:
    if get_origin(tp) in (Union, UnionType):
        args = [a for a in get_args(tp) if a is not NoneType]
        if len(args) == 1:
            return args[0]
    return tp


def source_of(loc: KeyPath, origin: Mapping[KeyPath, str]) -> str | None:
    for end in range(len(loc), -1, -1):
        if loc[:end] in origin:
            return origin[loc[:end]]
    return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
