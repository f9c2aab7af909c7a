"""A purge (``reme forget --purge``) takes its notes out of the topics and the note raising them.

The topics file links the daily notes each topic came from, the note that resolved it, and text
the model wrote from them (the question, ``resolution``); a purged note must leave all of it. This
is code applying a user's purge, not a model's proposal, so ``update.verify`` (no topic dropped
without a resolving note) does not judge it:

- every topic loses its link to the note (``notes``), its first and last seen days are counted
  again from the notes left;
- a topic left without any note is dropped, its text with it (nothing else says it was asked);
- a topic resolved by the note (``resolved_by``) goes back to open without its ``resolution``
  (the answer came from the note; the question still has other evidence), and a later run may
  resolve it again;
- ``daily/_proactive.md`` is rendered again from what is left.

The cursor gets a mark for the new topics file (so the next run reads on from where it was).
"""

from __future__ import annotations

from collections.abc import Set
from typing import Any

from reme_core.api import ProactiveTopic, ProactiveTopics

from .cursor import load_cursor, save_cursor
from .models import link, note_path
from .reading import read_topics
from .update import DAILY_NOTE
from .writing import lock, note_text, now, today, write_note, write_topics

DEFAULT_MAX_RAISED = 10


def without_notes(topics: ProactiveTopics, paths: Set[str]) -> tuple[ProactiveTopics, list[str]]:
    """The topics without any link to ``paths`` (see the module doc), and one line per topic
    changed (``t1a2b3c4d: dropped ...``; ids are reme's hashes, not the note's words)."""
    refs = {link(p) for p in paths}
    kept: list[ProactiveTopic] = []
    changes: list[str] = []
    for topic in topics.topics:
        notes = [n for n in topic.notes if n not in refs]
        resolved_by_it = topic.resolved_by in refs
        if len(notes) == len(topic.notes) and not resolved_by_it:
            kept.append(topic)
            continue
        if not notes:
            changes.append(f"{topic.id}: dropped (the purged note was its only evidence)")
            continue
        update: dict[str, Any] = {"notes": notes}
        days = [_day(n) for n in notes]
        if all(days):
            update |= {"first_seen": min(days), "last_seen": max(days)}
        what = f"{topic.id}: the purged note unlinked"
        if resolved_by_it:
            update |= {"state": "open", "resolved_by": None, "resolution": None}
            what = f"{topic.id}: reopened (it was resolved by the purged note)"
        kept.append(topic.model_copy(update=update))
        changes.append(what)
    return topics.model_copy(update={"topics": kept}), changes


def forget_in_topics(reme: Any, paths: Set[str], dry_run: bool = False) -> dict[str, list[str]]:
    """Take ``paths`` out of ``daily/_proactive.yaml`` and render ``daily/_proactive.md`` again;
    returns each file changed (with ``dry_run``: that would be) and what changed in it. The
    caller holds the history entry; both writes are atomic."""
    notes = {p for p in paths if p.lower().endswith(".md")}
    if not notes:
        return {}
    with lock(reme):
        found = read_topics(reme)  # a malformed file is the caller's RemeError; nothing written
        cleaned, changes = without_notes(found.topics, notes)
        if not changes:
            return {}
        out = {ProactiveTopics.PATH: changes}
        cleaned = cleaned.model_copy(update={"updated": now(reme)})
        note, note_hash = note_text(reme, cleaned, today(reme), _max_raised(reme))
        if note_hash is not None:
            out[ProactiveTopics.NOTE_PATH] = ["rendered again from the topics left"]
        if dry_run:
            return out
        base = load_cursor(reme.state_dir).notes_for(found.hash)
        new_hash = write_topics(reme, cleaned, found.hash)
        if reme.catalog.hashes([ProactiveTopics.PATH]):
            reme.indexer.update([ProactiveTopics.PATH])  # an index of YAML files holds it too
        if note_hash is not None:
            write_note(reme, note, note_hash)
        cursor = load_cursor(reme.state_dir)
        read = {p: h for p, h in base.items() if p not in notes}
        save_cursor(reme.state_dir, cursor.advanced(new_hash, read, now(reme)))
    return out


def _day(ref: str) -> str | None:
    found = DAILY_NOTE.match(note_path(ref))
    return found.group(1) if found else None


def _max_raised(reme: Any) -> int:
    """The ``max_raised`` a proactive step is configured with (the note lists that many)."""
    for pipeline in reme.settings.pipelines.values():
        for step in pipeline.steps:
            if step.name == "proactive" and "max_raised" in (step.settings or {}):
                return int(step.settings["max_raised"])
    return DEFAULT_MAX_RAISED
