"""Verify a decision against its verb, comparing the target's text before and after.

Each failed rule raises ``DecisionRejected`` with a reason written for the model, which gets it
back on the retry. The rules (DESIGN.md section 5):

- every verb: one Markdown file under ``digest/<bucket>/``, valid frontmatter, a ``## Sources``
  section linking every source note of the unit;
- CREATE: the file does not exist yet, and lies in the unit's bucket;
- CORROBORATE: nothing changes but added source links;
- REFINE: additive: every wikilink, source link and frontmatter key stays, and at most one
  passage is rewritten (without losing most of it);
- CORRECT: as REFINE, plus a new ``> note: contradicted by [[<evidence>]] - ...`` line beside
  what it corrects, the evidence being one of the unit's sources.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence

from reme_core.api import RemeError, parse_links, parse_note

from .apply import Applied
from .sources import LinkKeys, is_bucket_path, normalise_path, sources_text, target_path
from .units import BUCKETS, Decision, DecisionRejected, DreamUnit

ANNOTATION = re.compile(
    r"^\s*>\s*note:\s*contradicted\s+by\s+\[\[([^\[\]\n]+)\]\]\s*[-\u2013\u2014]+\s*\S",
    re.IGNORECASE,
)
_SOURCE_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+.*\[\[")
_SOURCES_HEADING = re.compile(r"^#{1,6}\s+sources\s*#*\s*$", re.IGNORECASE)
MIN_KEPT = 0.5
"""A rewritten passage must keep at least this share of its text (REFINE is additive) ..."""
MIN_PASSAGE_CHARS = 80
"""... once it is longer than this (a short claim may be rewritten freely)."""


def check_target(
    decision: Decision, unit: DreamUnit, candidates: Sequence[str], exists: Callable[[str], bool]
) -> str:
    """The decision's target as a plain workspace path, or DecisionRejected."""
    target = target_path(decision.target)
    if decision.verb == "CREATE":
        if not is_bucket_path(target, (unit.bucket,)):
            raise DecisionRejected(
                f"CREATE target must be a new Markdown file under digest/{unit.bucket}/ (the "
                f"unit's bucket), such as digest/{unit.bucket}/<short-name>.md; got {target!r}"
            )
        if exists(target):
            raise DecisionRejected(
                f"CREATE over an existing file: {target} already exists; integrate into it with "
                "CORROBORATE, REFINE or CORRECT, or CREATE under another name"
            )
        return target
    if not is_bucket_path(target, BUCKETS):
        raise DecisionRejected(
            f"{decision.verb} target must be an existing digest node (digest/<bucket>/...md); "
            f"got {target!r}"
        )
    if target not in candidates:
        shown = ", ".join(candidates) or "none"
        raise DecisionRejected(
            f"{decision.verb} target {target} is not one of the candidate nodes shown ({shown}); "
            "change only a node whose text you were given, or CREATE a new one"
        )
    if not exists(target):
        raise DecisionRejected(f"{target} does not exist any more; CREATE it instead")
    return target


def verify(
    decision: Decision,
    target: str,
    before: str | None,
    applied: Applied,
    unit: DreamUnit,
    keys: LinkKeys,
) -> list[str]:
    """Raise DecisionRejected unless ``applied.after`` honours the verb's contract; return the
    checks it passed (a proposal's verdict)."""
    after = applied.after
    try:
        after_note = parse_note(target, after)
    except RemeError as exc:
        raise DecisionRejected(f"the new text of {target} is not a valid note: {exc}") from None
    passed = ["the new text is a valid note"]
    _check_sources_linked(after, unit, keys)
    passed.append("## Sources links every source note of the unit")
    if decision.verb == "CREATE":
        _check_create(after_note.body, after, target)
        return [*passed, "the new node says something"]
    if before is None:
        raise DecisionRejected(f"{target} does not exist; CREATE it instead")
    try:
        before_note = parse_note(target, before)
    except RemeError as exc:
        raise DecisionRejected(
            f"{target} cannot be changed safely, its current text is not a valid note ({exc}); "
            "choose another node or CREATE one"
        ) from None
    _check_links_kept(before, after, keys)
    passed.append("every wikilink and source link is kept")
    if decision.verb == "CORROBORATE":
        _check_only_sources_added(before, after, unit, keys)
        return [*passed, "CORROBORATE only adds source links"]
    if applied.proposed == before:
        raise DecisionRejected(
            f"{decision.verb} made no change to {target}; give the new `content` or an `edit`, "
            "or use CORROBORATE when the unit only confirms what the node says"
        )
    lost = [k for k in before_note.frontmatter if k not in after_note.frontmatter]
    if lost:
        raise DecisionRejected(
            f"{decision.verb} removed frontmatter keys {', '.join(lost)}; keep every key"
        )
    passed += [f"{decision.verb} changes the node", "every frontmatter key is kept"]
    region = _check_one_passage(before_note.body, after_note.body, decision.verb)
    passed.append("at most one passage is rewritten, keeping most of it")
    if decision.verb == "CORRECT":
        _check_annotation(decision, before, after, after_note.body, region, unit, keys)
        passed.append("a `> note: contradicted by [[evidence]]` line sits beside the change")
    return passed


def _check_sources_linked(after: str, unit: DreamUnit, keys: LinkKeys) -> None:
    linked = keys.keys(sources_text(after))
    missing = [p for p in unit.sources if keys.path_key(p) not in linked]
    if missing:
        raise DecisionRejected(
            "the `## Sources` section must link every source note of the unit; missing: "
            + ", ".join(missing)
        )


def _check_create(body: str, after: str, target: str) -> None:
    rest = body.replace(sources_text(after), "")
    if not any(line.strip() and not line.lstrip().startswith("#") for line in rest.splitlines()):
        raise DecisionRejected(f"CREATE content for {target} is empty: write what the unit says")


def _check_links_kept(before: str, after: str, keys: LinkKeys) -> None:
    after_keys = keys.keys(after)
    dropped = [shown for key, shown in keys.keys(before).items() if key not in after_keys]
    if dropped:
        raise DecisionRejected(
            f"the change drops links {', '.join(dropped)}; every wikilink present before must "
            "still be present"
        )
    after_sources = keys.keys(sources_text(after))
    moved = [
        shown for key, shown in keys.keys(sources_text(before)).items() if key not in after_sources
    ]
    if moved:
        raise DecisionRejected(
            f"the change removes source links {', '.join(moved)} from `## Sources`; keep them there"
        )


def _strip(lines: list[str]) -> list[str]:
    return [line.rstrip() for line in lines]


def _opcodes(
    before: str, after: str
) -> tuple[list[str], list[str], list[tuple[int, int, int, int]]]:
    """Line-level changes that are more than blank lines: ``(i1, i2, j1, j2)`` each."""
    old, new = _strip(before.splitlines()), _strip(after.splitlines())
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    changes = [
        (i1, i2, j1, j2)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal" and any(line.strip() for line in old[i1:i2] + new[j1:j2])
    ]
    return old, new, changes


def _check_only_sources_added(before: str, after: str, unit: DreamUnit, keys: LinkKeys) -> None:
    old, new, changes = _opcodes(before, after)
    allowed = {keys.path_key(p) for p in unit.sources}
    for i1, i2, j1, j2 in changes:
        removed = [line for line in old[i1:i2] if line.strip()]
        if removed:
            raise DecisionRejected(
                f"CORROBORATE may only add source links, but it changes line {i1 + 1}: "
                f"{removed[0].strip()[:120]!r}; leave `content` and `edit` out to let the core "
                "add the link, or use REFINE to add information"
            )
        for line in new[j1:j2]:
            if not line.strip() or _SOURCES_HEADING.match(line.strip()):
                continue
            links = [keys.key(link.raw) for link in parse_links(line)]
            if not _SOURCE_ITEM.match(line) or not links or not set(links) <= allowed:
                raise DecisionRejected(
                    f"CORROBORATE may only add links to the unit's source notes, but it adds "
                    f"{line.strip()[:120]!r}; use REFINE to add information"
                )


def _merge(changes: list[tuple[int, int, int, int]], old: list[str]) -> list[list[int]]:
    """Changes that remove text, merged when only blank lines separate them."""
    regions: list[list[int]] = []
    for i1, i2, j1, j2 in changes:
        if not any(line.strip() for line in old[i1:i2]):
            continue  # a pure insertion: additive, allowed anywhere
        if regions and not any(line.strip() for line in old[regions[-1][1] : i1]):
            regions[-1][1], regions[-1][3] = i2, j2
        else:
            regions.append([i1, i2, j1, j2])
    return regions


def _check_one_passage(before_body: str, after_body: str, verb: str) -> tuple[int, int] | None:
    """At most one rewritten passage that keeps most of its text; its line span in ``after``."""
    old, new, changes = _opcodes(before_body, after_body)
    regions = _merge(changes, old)
    if len(regions) > 1:
        spans = ", ".join(f"lines {i1 + 1}-{i2}" for i1, i2, _, _ in regions)
        raise DecisionRejected(
            f"{verb} is additive: it may rewrite one passage, but it removes or changes text in "
            f"{len(regions)} places ({spans} of the body); keep the rest exactly as it was"
        )
    if not regions:
        return None
    i1, i2, j1, j2 = regions[0]
    old_chars = len("".join(old[i1:i2]).replace(" ", ""))
    new_chars = len("".join(new[j1:j2]).replace(" ", ""))
    if old_chars > MIN_PASSAGE_CHARS and new_chars < MIN_KEPT * old_chars:
        raise DecisionRejected(
            f"{verb} is additive, but the passage at lines {i1 + 1}-{i2} of the body shrinks from "
            f"{old_chars} to {new_chars} characters; refine or correct it without deleting it"
        )
    return j1, j2


def _check_annotation(
    decision: Decision,
    before: str,
    after: str,
    after_body: str,
    region: tuple[int, int] | None,
    unit: DreamUnit,
    keys: LinkKeys,
) -> None:
    if not decision.evidence or not decision.evidence.strip():
        raise DecisionRejected(
            "CORRECT needs `evidence`: the source note of the unit that contradicts the node"
        )
    evidence = keys.path_key(decision.evidence)
    if evidence not in {keys.path_key(p) for p in unit.sources}:
        raise DecisionRejected(
            f"CORRECT evidence {normalise_path(decision.evidence)} is not one of the unit's "
            f"sources ({', '.join(unit.sources)})"
        )
    old_lines = set(_strip(before.splitlines()))
    lines = _strip(after_body.splitlines())
    found = [
        index
        for index, line in enumerate(lines)
        if line not in old_lines
        and (m := ANNOTATION.match(line)) is not None
        and keys.key(m.group(1).split("|", 1)[0].split("#", 1)[0]) == evidence
    ]
    if not found:
        raise DecisionRejected(
            "CORRECT must add a line `> note: contradicted by "
            f"[[{normalise_path(decision.evidence).removesuffix('.md')}]] - <one line why>` "
            "beside the statement it corrects"
        )
    if region is None or any(_beside(index, region, lines) for index in found):
        return
    raise DecisionRejected(
        f"the `> note: contradicted by ...` line must sit beside what it corrects (the changed "
        f"passage at lines {region[0] + 1}-{region[1]} of the body), not elsewhere in the node"
    )


def _beside(index: int, region: tuple[int, int], lines: list[str]) -> bool:
    """Inside the changed passage, or next to it with only blank lines between."""
    start, end = region
    if start <= index < end:
        return True
    low, high = (index + 1, start) if index < start else (end, index)
    return not any(line.strip() for line in lines[low:high])
