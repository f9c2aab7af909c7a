"""The folder tree of the Browse page, one folder at a time (the ``list`` operation): the
workspace's own folders first, ``daily/`` grouped by month and date, newest first."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

SHOWN_PER_FOLDER = 500
"""Entries listed in one folder; the rest are counted ("and N more: search for them")."""
TOP_FOLDERS = ("daily", "digest", "resource", "sessions")
_DATE = re.compile(r"^(\d{4}-\d{2})-\d{2}$")


@dataclass
class Node:
    path: str
    label: str
    kind: str
    """``dir`` (its entries are listed when it is opened), ``file``, ``month`` (its dates are
    ``children``) or ``date`` (a day page and/or a day folder)."""
    children: list[Node] = field(default_factory=list)
    page: str | None = None
    """A date's day page (``daily/2026-11-02.md``)."""
    folder: str | None = None
    """A date's folder of notes (``daily/2026-11-02``), listed when the date is opened."""


@dataclass
class Folder:
    path: str
    nodes: list[Node]
    hidden: int = 0
    """Entries not shown (over SHOWN_PER_FOLDER)."""


def folder(path: str, entries: list[dict[str, Any]]) -> Folder:
    """The nodes to show for one listed folder."""
    nodes = _daily(entries) if path == "daily" else _plain(path, entries)
    hidden = max(0, len(nodes) - SHOWN_PER_FOLDER)
    return Folder(path, nodes[:SHOWN_PER_FOLDER], hidden)


def _node(entry: dict[str, Any]) -> Node:
    path = entry["path"]
    return Node(path, posixpath.basename(path), entry["kind"])


def _plain(path: str, entries: list[dict[str, Any]]) -> list[Node]:
    def order(entry: dict[str, Any]) -> tuple[int, int, str]:
        name = posixpath.basename(entry["path"])
        top = TOP_FOLDERS.index(name) if path == "" and name in TOP_FOLDERS else len(TOP_FOLDERS)
        return (top, 0 if entry["kind"] == "dir" else 1, name.lower())

    return [_node(e) for e in sorted(entries, key=order)]


def _daily(entries: list[dict[str, Any]]) -> list[Node]:
    """``daily/2026-11-02/`` and ``daily/2026-11-02.md`` under one date, dates under months,
    newest first; anything else after them."""
    dates: dict[str, Node] = {}
    other: list[Node] = []
    for entry in entries:
        name = posixpath.basename(entry["path"])
        is_page = entry["kind"] == "file" and name.endswith(".md")
        stem = name[:-3] if is_page else name
        if _DATE.match(stem) and (is_page or entry["kind"] == "dir"):
            date = dates.setdefault(stem, Node(f"daily/{stem}", stem, "date"))
            if is_page:
                date.page = entry["path"]
            else:
                date.folder = entry["path"]
        else:
            other.append(_node(entry))
    months: dict[str, Node] = {}
    for stem in sorted(dates, reverse=True):
        month = stem[:7]
        months.setdefault(month, Node(f"daily/{month}", month, "month")).children.append(
            dates[stem]
        )
    return [*months.values(), *sorted(other, key=lambda n: n.label.lower())]


def ancestors(path: str) -> list[str]:
    """The folders to list so that ``path`` shows in the tree: the root, then each parent."""
    parts = path.split("/")[:-1] if path else []
    return ["", *("/".join(parts[: i + 1]) for i in range(len(parts)))]
