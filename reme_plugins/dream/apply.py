"""Apply a decision in memory: the model's text or edit, then the provenance the core owns.

Nothing here touches the disk. The core, not the model, adds the unit's source links to the
``## Sources`` section and fills a new node's ``name``/``description``: these are bookkeeping the
model should not be able to get wrong, and ``verify`` still checks the final text.
"""

from __future__ import annotations

from dataclasses import dataclass

from reme_core.api import (
    FrontmatterError,
    dump_note,
    parse_frontmatter,
    split_frontmatter,
    update_frontmatter,
)

from .sources import LinkKeys, add_sources, target_path
from .units import Decision, DecisionRejected, DreamUnit

DESCRIPTION_CHARS = 200


@dataclass(frozen=True)
class Applied:
    proposed: str
    """The text after the model's own change, before the core's provenance."""
    after: str
    """The text that would be written."""


def apply_decision(
    decision: Decision, target: str, before: str | None, unit: DreamUnit, keys: LinkKeys
) -> Applied:
    """The target's new text; DecisionRejected when the decision cannot even be applied."""
    proposed = _model_text(decision, target, before)
    after = proposed
    if decision.verb == "CREATE":
        after = _with_defaults(after, target, unit)
    return Applied(proposed=proposed, after=add_sources(after, list(unit.sources), keys))


def _model_text(decision: Decision, target: str, before: str | None) -> str:
    if decision.content is not None and decision.edit is not None:
        raise DecisionRejected("give either `content` (the whole text) or `edit`, not both")
    if decision.edit is not None:
        edit = decision.edit
        if edit.path is not None and target_path(edit.path) != target:
            raise DecisionRejected(
                f"the edit is for {target_path(edit.path)}, but only the target {target} "
                "may change; a decision changes exactly one file"
            )
        if before is None:
            raise DecisionRejected(
                f"{target} does not exist, so there is nothing to edit; CREATE takes `content`"
            )
        found = before.count(edit.old_text)
        if found != 1:
            advice = (
                "copy it exactly from the candidate's text"
                if found == 0
                else "quote more of the surrounding text to make it unique"
            )
            raise DecisionRejected(
                f"edit.old_text occurs {found} times in {target}; it must occur exactly once "
                f"({advice})"
            )
        return before.replace(edit.old_text, edit.new_text, 1)
    if decision.content is not None:
        content = decision.content
        return content if content.endswith("\n") else content + "\n"
    if before is None:
        raise DecisionRejected(f"{decision.verb} of a new file needs `content`")
    return before


def _with_defaults(text: str, target: str, unit: DreamUnit) -> str:
    """A new node gets ``name`` and ``description`` from its unit when the model left them out."""
    try:
        block = split_frontmatter(text, target)
        current, _ = parse_frontmatter(text, target)
    except FrontmatterError as exc:
        raise DecisionRejected(f"the content's frontmatter is invalid: {exc}") from None
    defaults = {
        "name": unit.name,
        "description": " ".join(unit.summary.split())[:DESCRIPTION_CHARS],
    }
    missing = {k: v for k, v in defaults.items() if not str(current.get(k) or "").strip()}
    if not missing:
        return text
    if block is None:
        return dump_note(missing, "\n" + text.lstrip("\n"))
    try:
        return update_frontmatter(text, missing, path=target)
    except FrontmatterError as exc:
        raise DecisionRejected(f"the content's frontmatter is invalid: {exc}") from None
