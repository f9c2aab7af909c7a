"""The text of a resource note: new, rewritten after its file changed, or following a rename.

Rewrites go through the existing text so every frontmatter key the step does not own (``tags``
from auto_tag, keys a person added, comments) survives; only the generated body is replaced.
"""

from __future__ import annotations

from typing import Any

from reme_core.api import Prompts, dump_note, split_frontmatter, update_frontmatter
from reme_plugins.auto_resource.summarise import ResourceSummary

ARCHIVE_KEYS = ("status", "archived_reason")


def link(source: str) -> str:
    return f"[[{source}]]"


def owned_keys(
    summary: ResourceSummary, source: str, resource_hash: str, kind: str
) -> dict[str, Any]:
    """The frontmatter keys this step writes, in the order a new note shows them."""
    return {
        "name": summary.name,
        "description": summary.description,
        **provenance_keys(source, resource_hash, kind),
    }


def provenance_keys(source: str, resource_hash: str, kind: str) -> dict[str, Any]:
    """The keys that tie a note to its file (the ones a run finds it by)."""
    return {"source_resource": link(source), "resource_hash": resource_hash, "resource_type": kind}


def body(summary: ResourceSummary, source: str, labels: Prompts, max_key_points: int) -> str:
    lines = [f"# {summary.name}", "", summary.summary, ""]
    points = [p.strip() for p in summary.key_points if p.strip()][:max_key_points]
    if points:
        lines += [f"## {labels.render('key_points_heading').strip()}", ""]
        lines += [f"- {point}" for point in points]
        lines.append("")
    lines += [labels.render("source_line", link=link(source)).strip(), ""]
    return "\n".join(lines)


def new_note(keys: dict[str, Any], text: str) -> str:
    return dump_note(keys, text)


def rewritten(old: str, path: str, keys: dict[str, Any], text: str, reactivate: bool) -> str:
    """``old`` with the owned keys set and its body replaced by ``text``."""
    remove = ARCHIVE_KEYS if reactivate else ()
    updated = update_frontmatter(old, keys, remove, path=path)
    block = split_frontmatter(updated, path)
    head = updated[: block.body_start] if block is not None else ""
    return head + text


def renamed(old: str, path: str, before: str, after: str, reactivate: bool) -> str:
    """``old`` pointing at ``after`` instead of ``before``; the summary still holds (same bytes)."""
    moved = old.replace(link(before), link(after))
    remove = ARCHIVE_KEYS if reactivate else ()
    return update_frontmatter(moved, {"source_resource": link(after)}, remove, path=path)
