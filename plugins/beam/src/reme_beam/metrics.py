"""BEAM retrieval metrics that need no model, and their per-ability means.

For a question with evidence ids E and ranked hits h1..hn, each showing a set of message ids:

- ``recall@k``: the share of E in ids(h1) + ... + ids(hk) (set union), what the first k
  results show (BEAM's evidence recall from ``source_chat_ids``);
- ``any@k``: 1 when the first k results show at least one evidence message, else 0;
- ``shown@k``: how many distinct messages the first k results show, the price of that recall
  (a step that returns wider results, such as ``search_v2``'s line ranges, shows more per hit);
- ``recall@<m>msg``: recall over the longest run of first results that shows at most m
  messages, so steps whose results differ in width compare at the same reading budget.

k counts results (chunks), what an agent reading the top k would see. Abstention questions have
no evidence: they get no retrieval figures and are counted apart (``no_evidence``).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence, Set

KS: tuple[int, ...] = (1, 3, 5, 10, 30, 50)
MESSAGE_BUDGETS: tuple[int, ...] = (20, 50)
RETRIEVAL_KEYS: tuple[str, ...] = ("recall", "any", "shown")


def covered(hit_ids: Sequence[Set[str]], k: int) -> set[str]:
    """Message ids shown by the first ``k`` hits."""
    out: set[str] = set()
    for ids in hit_ids[:k]:
        out |= ids
    return out


def evidence_recall_at_k(hit_ids: Sequence[Set[str]], evidence: Iterable[str], k: int) -> float:
    """Share of ``evidence`` shown by the first ``k`` hits; nan without evidence."""
    wanted = set(evidence)
    if not wanted:
        return math.nan
    return len(wanted & covered(hit_ids, k)) / len(wanted)


def evidence_any_at_k(hit_ids: Sequence[Set[str]], evidence: Iterable[str], k: int) -> float:
    """1.0 when the first ``k`` hits show any evidence message; nan without evidence."""
    wanted = set(evidence)
    if not wanted:
        return math.nan
    return 1.0 if wanted & covered(hit_ids, k) else 0.0


def recall_within_messages(
    hit_ids: Sequence[Set[str]], evidence: Iterable[str], budget: int
) -> float:
    """Recall of the longest prefix of hits that shows at most ``budget`` distinct messages."""
    wanted = set(evidence)
    if not wanted:
        return math.nan
    shown: set[str] = set()
    for ids in hit_ids:
        if len(shown | ids) > budget:
            break
        shown |= ids
    return len(wanted & shown) / len(wanted)


def retrieval_metrics(
    hit_ids: Sequence[Set[str]],
    evidence: Iterable[str],
    ks: Iterable[int] = KS,
    budgets: Iterable[int] = MESSAGE_BUDGETS,
) -> dict[str, float]:
    """``recall@k``, ``any@k``, ``shown@k`` for each k and ``recall@<m>msg`` for each budget;
    {} for a question without evidence."""
    wanted = list(evidence)
    if not wanted:
        return {}
    out: dict[str, float] = {}
    for k in ks:
        out[f"recall@{k}"] = evidence_recall_at_k(hit_ids, wanted, k)
        out[f"any@{k}"] = evidence_any_at_k(hit_ids, wanted, k)
        out[f"shown@{k}"] = float(len(covered(hit_ids, k)))
    for budget in budgets:
        out[f"recall@{budget}msg"] = recall_within_messages(hit_ids, wanted, budget)
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
