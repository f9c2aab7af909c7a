"""One hop of link expansion: notes linked from or to the hits, both ways."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

from reme_core.components import Graph
from reme_core.schema import LinkedNote


class _Label(Protocol):
    @property
    def name(self) -> str | None: ...

    @property
    def description(self) -> str | None: ...


def expand_links(
    hit_paths: Sequence[str],
    graph: Graph,
    *,
    limit_each: int,
    allowed: Callable[[str], bool],
    describe: Callable[[list[str]], Mapping[str, _Label]],
) -> list[LinkedNote]:
    """Up to ``limit_each`` outbound and ``limit_each`` inbound neighbours, over all hits, in hit order.

    Notes already among the hits, and notes the search filters exclude, are left out.
    """
    seen = set(hit_paths)
    found: list[tuple[str, str, str]] = []
    left = {"outbound": limit_each, "inbound": limit_each}
    linked = graph.linked_paths(list(dict.fromkeys(hit_paths)))
    for via, (outbound, inbound) in linked.items():
        for direction, paths in (("outbound", outbound), ("inbound", inbound)):
            wanted = left[direction]
            if wanted <= 0:
                continue
            for path in paths:
                if path in seen or not allowed(path):
                    continue
                seen.add(path)
                found.append((path, via, direction))
                wanted -= 1
                if not wanted:
                    break
            left[direction] = wanted
        if left["outbound"] <= 0 and left["inbound"] <= 0:
            break
    notes = describe([path for path, _, _ in found])
    linked = []
    for path, via, direction in found:
        label = notes.get(path)
        linked.append(
            LinkedNote(
                path=path,
                via=via,
                direction=direction,  # type: ignore[arg-type]
                name=label.name if label is not None else None,
                description=label.description if label is not None else None,
            )
        )
    return linked
