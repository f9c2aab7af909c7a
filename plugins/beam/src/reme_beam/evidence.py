"""``source_chat_ids``: the message ids a BEAM question's answer rests on, in one shape.

Upstream writes them several ways: a flat list (``[28]``), a list with nested lists
(``[116, [136, 138]]``), a mapping of named groups (``{"original_info": [86], "updated_info":
[114]}``), ids as numbers or strings, and strings that carry the generator's ``->->`` position
marker (``"62 ->-> 2,7"``). Abstention questions have none. Everything becomes the same text ids
the chat's messages have (``str(id)``), first occurrence first.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

MARKER = "->->"


class Evidence(BaseModel):
    ids: tuple[str, ...] = ()
    """Every evidence message id, in first-seen order, without repeats."""
    groups: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    """For the mapping form, the ids of each named group (``first_statement``, ...)."""

    def __bool__(self) -> bool:
        return bool(self.ids)


def normalise_evidence(value: Any) -> Evidence:
    """``source_chat_ids`` in any of upstream's forms -> ``Evidence``."""
    if isinstance(value, dict):
        groups = {str(name): tuple(_unique(_flatten(sub))) for name, sub in value.items()}
        return Evidence(
            ids=tuple(_unique(i for ids in groups.values() for i in ids)), groups=groups
        )
    return Evidence(ids=tuple(_unique(_flatten(value))))


def normalise_id(value: Any) -> str | None:
    """One id as text: ``12``, ``"12"``, ``" 12 ->-> 1,3"`` -> ``"12"``; None when nothing is
    left (a bare marker, an empty string, null)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = str(value).split(MARKER, 1)[0].strip()
    if not text:
        return None
    # "012" and "12" name the same message; non-numeric ids are kept as written.
    return str(int(text)) if text.isdigit() else text


def _flatten(value: Any) -> list[str]:
    if isinstance(value, list | tuple):
        return [i for item in value for i in _flatten(item)]
    if isinstance(value, dict):
        return [i for item in value.values() for i in _flatten(item)]
    ident = normalise_id(value)
    return [] if ident is None else [ident]


def _unique(ids: Any) -> list[str]:
    return list(dict.fromkeys(ids))
