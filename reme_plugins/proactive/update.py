"""The model's answer applied to the topics in memory, and the checks code makes on the result.

``apply_answer`` is where ids are assigned (``topic_id``: never the model's) and where a
re-mention of a resolved topic brings it back open. ``verify`` then compares the topics before
and after on their own, so a bug in applying, or an answer that slipped past the response
model's validators, still cannot drop a topic, resolve one without a resolving note from this
run's input, or link a note that was not read.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from reme_core.api import ProactiveTopic, ProactiveTopics, topic_id

from .models import Answer, Rejected, link, note_path

DAILY_NOTE = re.compile(r"^daily/(\d{4}-\d{2}-\d{2})/.+\.md$")


def note_day(path: str) -> str:
    found = DAILY_NOTE.match(path)
    if found is None:
        raise Rejected(f"{path} is not a daily note (daily/YYYY-MM-DD/...)")
    return found.group(1)


@dataclass
class Changes:
    new: list[str] = field(default_factory=list)
    resolved: list[str] = field(default_factory=list)
    reopened: list[str] = field(default_factory=list)
    mentioned: list[str] = field(default_factory=list)
    snoozed: list[str] = field(default_factory=list)

    def verbs(self, topics: ProactiveTopics) -> list[str]:
        """One history line per change (``NEW t1a2b3c4d: the question``)."""
        lines = []
        for kind, ids in vars(self).items():
            for topic_id_ in ids:
                found = topics.get(topic_id_)
                lines.append(f"{kind.upper()} {topic_id_}: {found.text if found else '?'}")
        return lines

    def count(self) -> int:
        return sum(len(ids) for ids in vars(self).values())


def _add(topic: ProactiveTopic, path: str) -> None:
    ref = link(path)
    if ref not in topic.notes:
        topic.notes.append(ref)
        topic.notes.sort(key=lambda r: note_day(note_path(r)))
    day = note_day(path)
    topic.last_seen = max(topic.last_seen, day)
    topic.first_seen = min(topic.first_seen, day)


def apply_answer(before: ProactiveTopics, answer: Answer) -> tuple[ProactiveTopics, Changes]:
    """The topics after ``answer`` (``before`` is not changed) and what changed."""
    after = before.model_copy(deep=True)
    changes = Changes()
    for new in answer.new:
        paths = sorted(dict.fromkeys(new.notes), key=lambda p: (note_day(p), p))
        text = " ".join(new.text.split())
        same = topic_id(text, paths[0])
        if after.get(same) is not None:  # the same question from the same note, read again
            for path in paths:
                _add(after.get(same), path)  # type: ignore[arg-type]
            continue
        made = topic_id(text, paths[0], {t.id for t in after.topics})
        days = [note_day(p) for p in paths]
        after.topics.append(
            ProactiveTopic(
                id=made,
                text=text,
                kind=new.kind,
                notes=[link(p) for p in paths],
                first_seen=min(days),
                last_seen=max(days),
            )
        )
        changes.new.append(made)
    # Events in the order their notes were written; in one note a mention comes before a
    # resolution, so "asked again and answered" ends resolved.
    events = [(e.note, 0, "mention", e) for e in answer.mentioned]
    events += [(e.note, 1, "snooze", e) for e in answer.snoozed]
    events += [(e.note, 2, "resolve", e) for e in answer.resolved]
    events.sort(key=lambda item: (note_day(item[0]), item[0], item[1]))
    for path, _, kind, event in events:
        topic = after.get(event.topic)
        if topic is None:
            raise Rejected(f"topic {event.topic!r} does not exist")
        _add(topic, path)
        if kind == "resolve":
            if topic.state != "resolved":
                changes.resolved.append(topic.id)
            topic.state, topic.snoozed_until = "resolved", None
            topic.resolved_by = link(path)
            topic.resolution = " ".join(getattr(event, "how", "").split()) or None
        elif kind == "snooze":
            topic.state, topic.snoozed_until = "snoozed", event.until  # type: ignore[attr-defined]
            changes.snoozed.append(topic.id)
        elif topic.state == "resolved" and _after_resolution(topic, path):
            topic.state, topic.resolved_by, topic.resolution = "open", None, None
            changes.reopened.append(topic.id)
        else:
            changes.mentioned.append(topic.id)
    for ids in vars(changes).values():
        ids[:] = list(dict.fromkeys(ids))
    return after, changes


def _after_resolution(topic: ProactiveTopic, path: str) -> bool:
    """A mention reopens a resolved topic when it is another note, no older than the one that
    resolved it."""
    if topic.resolved_by is None or topic.resolved_by == link(path):
        return topic.resolved_by is None
    return note_day(path) >= note_day(note_path(topic.resolved_by))


def verify(
    before: ProactiveTopics,
    after: ProactiveTopics,
    inputs: dict[str, str],
    exists: Callable[[str], bool],
) -> list[str]:
    """The checks the change passes; Rejected naming the first it fails. ``inputs``: the notes
    this run read (path -> hash); ``exists``: whether a workspace note exists now. It judges a
    model's answer; a purge taking a note out of the topics (``forget``: a topic dropped with
    its only evidence, or reopened) is the user's, made by code, and does not come here."""
    given = {link(p) for p in inputs}
    old = {t.id: t for t in before.topics}
    new = {t.id: t for t in after.topics}
    dropped = sorted(set(old) - set(new))
    if dropped:
        raise Rejected(f"topic(s) {', '.join(dropped)} would be dropped; topics are only resolved")
    for topic in after.topics:
        was = old.get(topic.id)
        added = [n for n in topic.notes if was is None or n not in was.notes]
        foreign = [n for n in added if n not in given]
        if foreign:
            raise Rejected(f"topic {topic.id} links {foreign[0]}, which this run did not read")
        if was is None:
            expected = topic_id(topic.text, note_path(topic.notes[0]))
            if topic.id != expected and not topic.id.startswith(expected + "-"):
                raise Rejected(f"topic {topic.id} does not carry the id reme assigns it")
            if topic.state != "open":
                raise Rejected(f"new topic {topic.id} must start open, not {topic.state}")
            continue
        if topic.text != was.text:
            raise Rejected(f"topic {topic.id}'s text changed; a topic keeps its question")
        newly = was.state != "resolved" or was.resolved_by != topic.resolved_by
        if topic.state == "resolved" and newly:
            if topic.resolved_by not in given:
                raise Rejected(
                    f"topic {topic.id} is resolved without a resolving note from this run's input"
                )
            if not exists(note_path(topic.resolved_by)):
                raise Rejected(f"topic {topic.id}'s resolving note {topic.resolved_by} is gone")
        if was.state == "resolved" and topic.state == "open" and not added:
            raise Rejected(f"topic {topic.id} came back open without a new note linked")
    checks = [
        f"no topic dropped ({len(old)} before, {len(new)} after)",
        "every new link is a note this run read",
        "every resolution links its resolving note, read in this run and present",
        "ids assigned by reme, texts unchanged",
    ]
    return checks
