"""``compact_tool_result``: long tool outputs cut in the context, kept whole in the workspace.

A tool message over its byte limit keeps the head of its text plus a hint naming the spill file
``tool_results/<id>.txt`` (the exact original) and the line to read on from. Recent results
(the last ``recent_n``, and every result the model has not answered yet) are cut lightly, older
ones hard. A message cut before is cut again from its spill file, so a result that ages from
recent to old shrinks without losing anything. Only ``content`` changes: the message keeps its
``tool_call_id`` and every other key.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from reme_core.errors import WorkspaceError
from reme_core.light.messages import ContextError, content_text, validate_messages
from reme_core.pipelines.prompts import Prompts
from reme_core.workspace.atomic import atomic_write
from reme_core.workspace.paths import WorkspacePaths
from reme_core.workspace.read_tools import split_lines

TOOL_RESULTS_DIR = "tool_results"
HINT_SEPARATOR = "\n\n["
MAX_HINT_CHARS = 600
_SPILL_PATH = re.compile(rf"{TOOL_RESULTS_DIR}/[A-Za-z0-9_.-]+\.txt")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


class ToolResultLimits(BaseModel):
    """How hard tool outputs are cut (bytes of UTF-8 kept in the context)."""

    recent_n: int = Field(1, ge=0)
    """The last this-many tool results count as recent (besides any not yet answered)."""
    recent_max_bytes: int = Field(100 * 1024, ge=64)
    old_max_bytes: int = Field(3000, ge=64)
    retention_days: float | None = Field(3.0, ge=0)
    """Spill files untouched this long are deleted; None keeps them."""


@dataclass
class ToolCompaction:
    messages: list[dict[str, Any]]
    spilled: list[str] = field(default_factory=list)
    """Spill files written by this call."""
    cut: list[str] = field(default_factory=list)
    """tool_call_ids whose content was (re)cut."""
    removed: list[str] = field(default_factory=list)
    """Expired spill files deleted."""


class SpillStore:
    """The ``tool_results/`` folder of a workspace: confined, atomic writes; expiry by age."""

    def __init__(self, paths: WorkspacePaths):
        self.paths = paths

    def save(self, call_id: str, text: str) -> tuple[str, bool]:
        """Write ``text`` to ``tool_results/<id>.txt`` (another name if that holds other text);
        returns the path and whether it was written (False: the same text was there)."""
        # Not redacted, unlike summaries and the dialog log: a spill is the exact original that
        # the agent reads on from (the hint names byte and line offsets, and ``find_spill``
        # matches the head left in the context against it), the agent has already seen every
        # byte of it, and it may need a token it just fetched. The folder is left out of the
        # version history and (by default) the index, and its files expire after retention_days.
        data = text.encode("utf-8")
        stem = _UNSAFE.sub("_", call_id).strip("._")[:80] or "result"
        digest = hashlib.sha256(data).hexdigest()[:12]
        for name in (stem, f"{stem}-{digest}"):
            rel, absolute = self.paths.resolve(f"{TOOL_RESULTS_DIR}/{name}.txt", for_write=True)
            if absolute.is_file():
                if absolute.read_bytes() == data:
                    self.touch(rel)
                    return rel, False
                continue  # the same id holding another output (ids repeat across sessions)
            atomic_write(absolute, data)
            return rel, True
        raise WorkspaceError(f"cannot find a free spill file name for tool call {call_id!r}")

    def read(self, rel: str) -> str | None:
        try:
            _, absolute = self.paths.resolve(rel)
            return absolute.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError, WorkspaceError):
            return None

    def touch(self, rel: str) -> None:
        """Mark a spill file as still in use, so a long session keeps its files."""
        try:
            _, absolute = self.paths.resolve(rel, for_write=True)
            os.utime(absolute)
        except (OSError, WorkspaceError):
            pass

    def cleanup(self, retention_days: float, now: float | None = None) -> list[str]:
        """Delete spill files not written or touched in ``retention_days``."""
        folder = self.paths.root / TOOL_RESULTS_DIR
        # A linked folder may point anywhere: deleting in it could reach outside the workspace.
        if not folder.is_dir() or folder.is_symlink() or not self.paths.is_inside(folder):
            return []
        cutoff = (time.time() if now is None else now) - retention_days * 86400
        removed: list[str] = []
        for path in sorted(folder.glob("*.txt")):
            try:
                if path.is_file() and not path.is_symlink() and path.stat().st_mtime < cutoff:
                    path.unlink()
                    removed.append(f"{TOOL_RESULTS_DIR}/{path.name}")
            except OSError:
                continue  # removed by another process meanwhile
        return removed


def compact_tool_result(
    messages: Sequence[Mapping[str, Any]],
    store: SpillStore,
    prompts: Prompts,
    limits: ToolResultLimits | None = None,
) -> ToolCompaction:
    """Cut long tool outputs in a copy of ``messages``; spill the originals; expire old spills."""
    limits = limits or ToolResultLimits()
    msgs = validate_messages(messages)
    tool_indexes = [i for i, m in enumerate(msgs) if m.get("role") == "tool"]
    last_assistant = max(
        (i for i, m in enumerate(msgs) if m.get("role") == "assistant"), default=-1
    )
    recent = set(tool_indexes[-limits.recent_n :] if limits.recent_n else [])
    recent.update(i for i in tool_indexes if i > last_assistant)
    result = ToolCompaction(msgs)
    for index in tool_indexes:
        limit = limits.recent_max_bytes if index in recent else limits.old_max_bytes
        message = msgs[index]
        new_text = _cut_one(message, limit, store, prompts, result)
        if new_text is not None:
            msgs[index] = {**message, "content": new_text}
            result.cut.append(str(message.get("tool_call_id")))
    if limits.retention_days is not None:
        result.removed = store.cleanup(limits.retention_days)
    return result


def _cut_one(
    message: dict[str, Any],
    limit: int,
    store: SpillStore,
    prompts: Prompts,
    result: ToolCompaction,
) -> str | None:
    """The new content of one tool message, or None to leave it as it is."""
    text = content_text(message.get("content"))
    earlier = find_spill(text, store)
    if earlier is not None:
        rel, original = earlier
        store.touch(rel)
    else:
        if len(text.encode("utf-8")) <= limit:
            return None
        original = text
        rel, written = store.save(str(message.get("tool_call_id")), original)
        if written:
            result.spilled.append(rel)
    # An earlier cut under a larger limit now is cut again from the original (or restored).
    new_text = cut_text(original, limit, rel, prompts)
    return None if new_text == text else new_text


def cut_text(original: str, limit: int, rel: str, prompts: Prompts) -> str:
    """The first ``limit`` bytes of ``original`` (at a line end when one is near), plus the hint."""
    data = original.encode("utf-8")
    if len(data) <= limit:
        return original
    head = data[:limit].decode("utf-8", "ignore")
    newline = head.rfind("\n")
    if newline >= len(head) * 0.8:  # a whole last line reads better, if it costs little
        head = head[: newline + 1]
    hint = prompts.render(
        "tool_result_hint",
        shown_bytes=len(head.encode("utf-8")),
        total_bytes=len(data),
        total_lines=len(split_lines(original)),
        path=rel,
        next_line=head.count("\n") + 1,
    )
    if not hint.startswith("["):
        raise ContextError("the tool_result_hint prompt must start with '['")
    return head.rstrip("\n") + HINT_SEPARATOR + hint[1:]


def find_spill(text: str, store: SpillStore) -> tuple[str, str] | None:
    """``(spill path, original)`` when ``text`` is a cut this module made and its file exists."""
    at = text.rfind(HINT_SEPARATOR)
    if at < 0 or len(text) - at > MAX_HINT_CHARS:
        return None
    match = _SPILL_PATH.search(text, at)
    if match is None:
        return None
    original = store.read(match.group())
    head = text[:at]
    # The head must be the file's start (up to the newlines cut_text strips): a tool whose own
    # output mentions a spill path is not mistaken for a cut.
    if original is None or not original.startswith(head) or len(original) <= len(head):
        return None
    return match.group(), original
