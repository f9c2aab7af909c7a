"""BEAM retrieval metrics that need no model, at a budget of messages shown, and their means.

A reader of the results reads hits in rank order, and each hit shows some BEAM messages (a
chunk may show several, or none: a summary line). What a reader pays for is messages, not hits,
so every figure is taken at a budget of k messages shown (k from ``--k``):

- the messages shown within budget k are the first k distinct messages in reading order: hits in
  rank order, each hit's messages in the order its lines show them (what the floor's "first k
  messages shown" is for single messages). Messages are counted once: a hit that shows only
  messages already shown (the overlap of two chunks, a second chunk of one long message) costs
  nothing, and the hit that fills the budget is read only as far as it fits (its first
  messages), so every config reads k messages when it has them, as the floor does;
- ``recall@<k>msg``: the share of the evidence messages (``source_chat_ids``) those hits show;
- ``any@<k>msg``: 1 when they show at least one evidence message, else 0;
- ``shown@<k>msg``: how many distinct messages they show (k, or fewer when the search ran out of
  hits);
- ``hits@<k>msg``: how many hits that took (the last one perhaps in part), so steps whose
  results differ in width (``search``'s chunks, ``search_v2``'s line ranges) compare at the same
  reading budget.

Abstention questions have no evidence: they get no retrieval figures and are counted apart
(``no_evidence``).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

KS: tuple[int, ...] = (5, 10, 20, 50)
"""Default message budgets (``--k``): messages shown to the reader."""
RETRIEVAL_KEYS: tuple[str, ...] = ("recall", "any", "shown", "hits")


def metric_name(key: str, k: int) -> str:
    """``recall``, 10 -> ``recall@10msg``."""
    return f"{key}@{k}msg"


def read_within(hit_ids: Sequence[Sequence[str]], budget: int) -> tuple[int, list[str]]:
    """How many first hits are read within ``budget`` messages, and the distinct messages they
    show in reading order (at most ``budget``; the last hit read may be cut short)."""
    shown: dict[str, None] = {}
    for read, ids in enumerate(hit_ids):
        new = [i for i in dict.fromkeys(ids) if i not in shown]
        if not new:
            continue  # shows nothing new: costs nothing
        room = budget - len(shown)
        if room <= 0:
            return read, list(shown)
        shown.update(dict.fromkeys(new[:room]))
        if len(new) > room:
            return read + 1, list(shown)  # read only as far as the budget
    return len(hit_ids), list(shown)


def hits_within(hit_ids: Sequence[Sequence[str]], budget: int) -> int:
    """How many first hits are read within ``budget`` distinct messages (``read_within``)."""
    return read_within(hit_ids, budget)[0]


def messages_shown(hit_ids: Sequence[Iterable[str]], hits: int | None = None) -> set[str]:
    """Distinct messages the first ``hits`` hits show in full (all hits when None)."""
    out: set[str] = set()
    for ids in hit_ids[:hits]:
        out |= set(ids)
    return out


def recall_within_messages(
    hit_ids: Sequence[Sequence[str]], evidence: Iterable[str], budget: int
) -> float:
    """Share of ``evidence`` among the first ``budget`` messages shown; nan without evidence."""
    wanted = set(evidence)
    if not wanted:
        return math.nan
    return len(wanted.intersection(read_within(hit_ids, budget)[1])) / len(wanted)


def retrieval_metrics(
    hit_ids: Sequence[Sequence[str]], evidence: Iterable[str], ks: Iterable[int] = KS
) -> dict[str, float]:
    """``recall``, ``any``, ``shown`` and ``hits`` at each budget of ``ks`` messages; {} for a
    question without evidence."""
    wanted = set(evidence)
    if not wanted:
        return {}
    out: dict[str, float] = {}
    for k in ks:
        read, seen = read_within(hit_ids, k)
        shown = set(seen)
        found = wanted & shown
        out[metric_name("recall", k)] = len(found) / len(wanted)
        out[metric_name("any", k)] = 1.0 if found else 0.0
        out[metric_name("shown", k)] = float(len(shown))
        out[metric_name("hits", k)] = float(read)
    return out


def mean(values: Iterable[float]) -> float:
    """Mean of the values that are numbers (nan ones skipped); nan when none are."""
    kept = [v for v in values if v is not None and not math.isnan(v)]
    return sum(kept) / len(kept) if kept else math.nan


def by_ability(rows: Iterable[Mapping[str, object]]) -> dict[str, dict[str, float]]:
    """Mean of every numeric metric per ability, plus ``n`` (questions with that metric).

    ``rows`` have ``ability`` and ``metrics`` (a mapping of name -> float). Two summary rows
    follow the abilities: ``overall`` (every question weighs the same) and ``macro`` (every
    ability weighs the same, as BEAM's per-ability tables are averaged).
    """
    values: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    counts: dict[str, int] = defaultdict(int)
    for row in rows:
        ability = str(row["ability"])
        counts[ability] += 1
        metrics = row.get("metrics") or {}
        for name, value in metrics.items():  # type: ignore[union-attr]
            if isinstance(value, int | float) and not math.isnan(value):
                values[ability][name].append(float(value))
    table: dict[str, dict[str, float]] = {}
    for ability in sorted(counts):
        table[ability] = {"questions": float(counts[ability])}
        for name, items in sorted(values[ability].items()):
            table[ability][name] = mean(items)
            table[ability][f"n:{name}"] = float(len(items))
    if not table:
        return table
    names = sorted({n for a in values.values() for n in a})
    overall = {"questions": float(sum(counts.values()))}
    macro = {"questions": overall["questions"]}
    for name in names:
        every = [v for ability in values.values() for v in ability.get(name, [])]
        overall[name] = mean(every)
        overall[f"n:{name}"] = float(len(every))
        macro[name] = mean(table[a][name] for a in table if name in table[a])
        macro[f"n:{name}"] = overall[f"n:{name}"]
    table["overall"] = overall
    table["macro"] = macro
    return table
