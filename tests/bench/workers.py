"""Top-level worker functions for the runner tests (spawned processes import them by name)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def square(item: dict[str, Any]) -> dict[str, Any]:
    if item.get("fail"):
        raise ValueError(f"cannot score {item['id']}")
    return {"category": item["cat"], "metrics": {"value": item["x"] ** 2}, "pid": os.getpid()}


def counting(item: dict[str, Any], log: str) -> dict[str, Any]:
    """Appends the item's id to ``log``: tells which items ran."""
    with Path(log).open("a", encoding="utf-8") as handle:
        handle.write(item["id"] + "\n")
    return square(item)
