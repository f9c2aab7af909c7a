"""How a session note's facts take a batch's checked facts (``merge_facts``): the note's items
stay byte for byte unless a new fact names them in ``replaces``; a fact already listed is not
listed twice."""

from __future__ import annotations

from reme_plugins.auto_memory import note as notes
from reme_plugins.auto_memory.draft import CheckedFact


def merge_facts(existing: list[str], facts: list[CheckedFact], source: str) -> list[str]:
    """``existing`` (the note's fact items) with ``facts`` (checked, quoting lines of the
    transcript ``source``): a fact replacing items takes the first one's place and the others go;
    the rest are appended."""
    slots: list[str | None] = list(existing)
    taken: set[int] = set()
    appended: list[str] = []
    seen = {" ".join(item.split()) for item in existing}
    for fact in facts:
        item = notes.fact_item(fact.text, fact.quote, fact.lines, source)
        if " ".join(item.split()) in seen:
            continue
        seen.add(" ".join(item.split()))
        free = [n for n in fact.replaces if n not in taken]
        if not free:
            appended.append(item)
            continue
        slots[free[0] - 1] = item
        for n in free:
            taken.add(n)
            if n != free[0]:
                slots[n - 1] = None
    return [s for s in slots if s] + appended
