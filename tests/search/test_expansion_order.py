"""Link expansion picks the same notes in the same order as before its loop was tightened
(issue 21): a frozen copy of the previous selection is the reference, over random graphs, hits,
filters and limits."""

from __future__ import annotations

import random

import pytest

from reme_core.index.catalog_queries import NoteLabel
from reme_core.search.expansion import expand_links


class _Graph:
    def __init__(self, links: dict[str, tuple[list[str], list[str]]]) -> None:
        self.links = links

    def linked_paths(self, paths):
        return {path: self.links.get(path, ([], [])) for path in dict.fromkeys(paths)}


def _old_selection(hit_paths, graph, limit_each, allowed):
    seen = set(hit_paths)
    found = []
    counts = {"outbound": 0, "inbound": 0}
    linked = graph.linked_paths(list(dict.fromkeys(hit_paths)))
    for via, (outbound, inbound) in linked.items():
        for direction, paths in (("outbound", outbound), ("inbound", inbound)):
            for path in paths:
                if counts[direction] >= limit_each:
                    break
                if path in seen or not allowed(path):
                    continue
                seen.add(path)
                counts[direction] += 1
                found.append((path, via, direction))
        if all(count >= limit_each for count in counts.values()):
            break
    return found


@pytest.mark.parametrize("seed", range(4))
def test_expansion_selects_as_before(seed: int) -> None:
    rng = random.Random(seed)
    notes = [f"n{i}.md" for i in range(60)]
    links = {
        note: (
            rng.choices(notes, k=rng.randrange(0, 8)),  # repeats kept, as the graph gives them
            sorted(rng.choices(notes, k=rng.randrange(0, 12))),
        )
        for note in notes
    }
    graph = _Graph(links)
    labels = {note: NoteLabel(f"name {note}", None) for note in notes[::2]}
    for _ in range(200):
        hits = rng.choices(notes, k=rng.randrange(1, 7))
        allowed = (set(notes) - set(rng.sample(notes, rng.randrange(0, 20)))).__contains__
        limit_each = rng.choice((-1, 0, 1, 3, 10))
        got = expand_links(
            hits,
            graph,  # type: ignore[arg-type]
            limit_each=limit_each,
            allowed=allowed,
            describe=lambda paths: {p: labels[p] for p in paths if p in labels},
        )
        want = _old_selection(hits, graph, limit_each, allowed)
        assert [(n.path, n.via, n.direction) for n in got] == want
        for n in got:
            label = labels.get(n.path)
            assert n.name == (label.name if label else None)
