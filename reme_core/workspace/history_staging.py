"""What the version history may hold, and how a file's content goes into it.

The history holds exactly what the note tools would serve: a regular text file (a served
suffix, confined, one hard link) that is not binary, is valid UTF-8 and is within the size
limit; and its content is redacted as text from a conversation is on ingest
(``reme_core.redact``), so ``history_show`` never returns a secret a note happens to hold.
A redacted file is staged as a blob written from the redacted text (``git hash-object -w
--stdin`` then ``git update-index --index-info``), never through ``git add``, so the secret
never becomes an object in the history's store.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from reme_core.errors import WorkspaceError
from reme_core.redact import redact
from reme_core.schema.proactive import TOPICS_PATH
from reme_core.workspace.paths import WorkspacePaths, is_internal
from reme_core.workspace.tools import MAX_FILE_BYTES, TEXT_SUFFIXES

HELD_FILES = frozenset({TOPICS_PATH})
"""Files the history holds though no note tool serves their suffix: the proactive pipeline's
topics (YAML), so reverting one of its runs restores them with the note it wrote."""
HELD_SUFFIXES = (".yaml",)
"""The suffixes of ``HELD_FILES``, for the walk that lists candidates."""
BINARY_PROBE_BYTES = 8192
"""How far into a file a NUL byte makes it binary (the file tools' own probe)."""


def may_hold(path: str) -> bool:
    """Whether a path's name is one the history may hold and show: a served text suffix,
    no hidden part, outside ``.reme/``, ``.git/`` and ``tool_results/``."""
    parts = path.split("/")
    if is_internal(path) or parts[0] == "tool_results":
        return False
    if any(part.startswith(".") for part in parts):
        return False
    return path.lower().endswith(TEXT_SUFFIXES) or path in HELD_FILES


def servable_content(data: bytes) -> str | None:
    """The text of a file's content if the note tools would serve it (within the size limit,
    no NUL in its first 8 KiB, valid UTF-8), else None."""
    if len(data) > MAX_FILE_BYTES or b"\0" in data[:BINARY_PROBE_BYTES]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def served_file(paths: WorkspacePaths, rel: str, *, walked: bool = False) -> bool:
    """Whether the file at ``rel`` is one the history may hold, judged from its name, where
    it resolves to (no link out, no second hard link) and its first bytes (cheap: the full
    content is checked only when it is staged).

    ``walked``: ``rel`` came from ``WorkspacePaths.iter_files``, which never enters a linked
    folder, so a regular file with one link is where its name says, and only its name needs
    the tools' checks (a full resolve per file was most of a snapshot's time)."""
    if not may_hold(rel):
        return False
    full = os.path.join(paths.root, rel)  # plain strings: pathlib was a third of the walk
    if walked and _plain_file(full):
        try:
            paths.relative(rel)  # the name rules (control, bidi characters, lengths)
        except WorkspaceError:
            return False
    elif paths.refusal(rel) is not None:
        return False
    try:
        with open(full, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
                return False
            return b"\0" not in handle.read(BINARY_PROBE_BYTES)
    except OSError:
        return False


def _plain_file(full: str) -> bool:
    try:
        info = os.lstat(full)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_nlink == 1


def history_text(root: Path, rel: str) -> tuple[str, bool] | None:
    """The text the history stores for the file at ``rel`` and whether redaction changed it;
    None when the file is not servable (gone, binary, not UTF-8, too big)."""
    try:
        data = (root / rel).read_bytes()
    except OSError:
        return None
    text = servable_content(data)
    if text is None:
        return None
    redacted, counts = redact(text)
    return redacted, bool(counts) and redacted != text
