"""CORRECT keeps what it corrects: the node's text before the correction is written beside it as
``<node>-v<N>.md`` with ``status: superseded`` and ``superseded_by: [[<node>]]``.

The node keeps its path (links to it keep meaning "the current statement"), and its corrected
passage carries the ``> note: contradicted by [[...]]`` line the verifier requires (the inline
annotation); the superseded copy holds the whole statement as it was, which search leaves out
unless asked for superseded notes, and then names the newer note on the hit. So a correction is
never a silent overwrite, and reverting the run's history entry removes the copy with it.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from reme_core.api import FrontmatterError, update_frontmatter

from .units import DecisionRejected

MAX_VERSIONS = 1000
"""A node corrected more often than this is a loop, not a history."""


def superseded_path(target: str, exists: Any) -> str:
    """The first free ``<stem>-v<N>.md`` beside ``target``."""
    stem = target.removesuffix(".md")
    for number in range(1, MAX_VERSIONS + 1):
        candidate = f"{stem}-v{number}.md"
        if not exists(candidate):
            return candidate
    raise DecisionRejected(f"{target} has {MAX_VERSIONS} superseded versions already")


def superseded_text(before: str, target: str, evidence: str | None, today: dt.date) -> str:
    """``before`` marked superseded by ``target`` (and, when given, contradicted by the unit's
    evidence); every other byte as it was."""
    fields: dict[str, Any] = {
        "status": "superseded",
        "superseded_by": f"[[{target.removesuffix('.md')}]]",
        "superseded_on": today.isoformat(),
    }
    if evidence:
        fields["contradicted_by"] = f"[[{evidence.strip().removesuffix('.md')}]]"
    try:
        return update_frontmatter(before, fields, path=target)
    except FrontmatterError as exc:  # check_target parsed it already; kept as a clear refusal
        raise DecisionRejected(
            f"{target}'s frontmatter cannot be marked superseded: {exc}"
        ) from None


def keep_superseded(reme: Any, target: str, before: str, evidence: str | None) -> str:
    """Write the superseded copy of ``target`` (create only: never over another file); returns
    its path."""
    path = superseded_path(target, lambda p: _exists(reme, p))
    today = dt.datetime.now(reme.settings.tzinfo()).date()
    reme.files.write(path, superseded_text(before, target, evidence, today), create_only=True)
    return path


def _exists(reme: Any, path: str) -> bool:
    from .integrate import exists  # integrate imports this module

    return exists(reme, path)
