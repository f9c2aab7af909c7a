"""The chunk ids each filter set allows, kept current as the catalog changes.

An answer is the set of note paths passing (one row per note, ``Catalog.chunked_paths``); its
chunk ids (``ChunkIds``) are those whose path is among them, built only when something needs
them all. Computing it still reads every note row, and every write changes the catalog. So each filter set keeps its last answer, and after a write only the paths
the catalog reports changed are looked up again; and when several searches need the same answer
at once, one computes it while the others wait for it, instead of each computing it.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from collections.abc import Set as AbstractSet
from concurrent.futures import Future
from dataclasses import dataclass

from reme_core.components import TagIndex
from reme_core.index.catalog import Catalog
from reme_core.schema import SearchFilters
from reme_core.search.expiry import Modified, Policy
from reme_core.search.filters import allowed_paths

MAX_FILTER_SETS = 8

WIDE_SHARE = 0.5
"""A filter set passing at least this share of the chunked notes is wide: an arm may rank
unfiltered and drop what fails (``ChunkIds.wide``), fewer than half its hits being dropped."""


class ChunkIds(AbstractSet[str]):
    """The chunk ids of the notes ``paths``, without building them: a chunk id passes when its
    note's path is among ``paths`` (``<path>#<ordinal>``), so membership costs one lookup.

    The first search with the default filters used to build every passing chunk id (57k at
    10,000 notes, ~0.1 s); most arms only ask whether their own hits pass. What needs the ids
    themselves (iterating, ``len``, a keyword index's mask) gets them from ``materialised``, read
    from the catalog once and kept (one set object: arms cache what they derive from it).

    An arm's ids are the catalog's (the indexer changes both in one exclusive section). An id the
    catalog lacks whose note passes (a projection left behind by a failed write) passes too,
    where the chunk ids once masked it; the engine drops it when it reads the hits (``hit_rows``).
    """

    def __init__(self, paths: frozenset[str], total: int, load: Callable[[], set[str]]):
        self.paths = paths
        self.total = total
        """Notes in the catalog (``wide`` compares ``paths`` with it)."""
        self._load = load
        self._ids: set[str] | None = None
        self._lock = threading.Lock()

    @property
    def wide(self) -> bool:
        """Whether most chunked notes pass (ranking unfiltered then dropping is then cheap)."""
        return len(self.paths) >= WIDE_SHARE * self.total

    def materialised(self) -> set[str]:
        """The ids as a plain set, read on first use and the same object afterwards."""
        if self._ids is None:
            with self._lock:
                if self._ids is None:
                    self._ids = self._load()
        return self._ids

    def __contains__(self, chunk_id: object) -> bool:
        if not isinstance(chunk_id, str):
            return False
        path, _, ordinal = chunk_id.rpartition("#")
        return ordinal.isdigit() and path in self.paths

    def __bool__(self) -> bool:
        return bool(self.paths)  # every path in it has a chunk

    def __len__(self) -> int:
        return len(self.materialised())

    def __iter__(self) -> Iterator[str]:
        return iter(self.materialised())


@dataclass(frozen=True)
class Allowed:
    """Chunk ids and note paths passing one filter set, as of one catalog generation.

    Arms may cache what they derive from ``ids`` by identity: a new answer is a new object.
    """

    generation: int
    ids: ChunkIds
    paths: frozenset[str]


class AllowedCache:
    """The answer per filter set (least recently used dropped beyond ``MAX_FILTER_SETS``)."""

    def __init__(
        self,
        catalog: Catalog,
        tags: TagIndex | None,
        today: Callable[[], dt.date] = dt.date.today,
        policy: Policy | None = None,
        modified: Modified | None = None,
    ):
        self.catalog = catalog
        self.tags = tags
        self.today = today
        """The day expiry is judged on (``search.expiry``): part of each answer's key, so a
        note expires at midnight without a write."""
        self.policy = dict(policy or {})
        """``lifecycle.expire`` (fixed for the workspace's life, so not part of the key)."""
        self.modified = modified
        self._lock = threading.Lock()
        self._answers: OrderedDict[str, Allowed] = OrderedDict()
        self._computing: dict[tuple[str, int], Future[Allowed]] = {}

    def get(self, filters: SearchFilters) -> Allowed:
        today = self.today()
        key = f"{today.isoformat()} {filters.model_dump_json()}"
        generation = self.catalog.generation
        with self._lock:
            known = self._answers.get(key)
            if known is not None and known.generation == generation:
                self._answers.move_to_end(key)
                return known
            pending = self._computing.get((key, generation))
            mine = pending is None
            if pending is None:
                pending = self._computing[key, generation] = Future()
        if not mine:
            return pending.result()  # another search is computing this very answer
        try:
            answer = self._compute(filters, generation, known, today)
        except BaseException as exc:
            with self._lock:
                del self._computing[key, generation]
            pending.set_exception(exc)
            raise
        with self._lock:
            del self._computing[key, generation]
            current = self._answers.get(key)
            if current is None or current.generation <= generation:
                self._answers[key] = answer
                self._answers.move_to_end(key)
                while len(self._answers) > MAX_FILTER_SETS:
                    self._answers.popitem(last=False)
        pending.set_result(answer)
        return answer

    def _compute(
        self, filters: SearchFilters, generation: int, known: Allowed | None, today: dt.date
    ) -> Allowed:
        changed = None
        if known is not None and known.generation < generation:
            changed = self.catalog.changed_since(known.generation)
        lookup = {"today": today, "policy": self.policy, "modified": self.modified}
        if known is None or changed is None or len(changed) > max(64, len(known.paths) // 4):
            paths = allowed_paths(filters, self.catalog, self.tags, **lookup)
        else:  # only the changed paths: drop them, add back those that pass now
            fresh = allowed_paths(filters, self.catalog, self.tags, within=changed, **lookup)
            paths = (known.paths - set(changed)) | fresh
        return self._answer(generation, frozenset(paths))

    def _answer(self, generation: int, paths: frozenset[str]) -> Allowed:
        total = len(paths) if not paths else self.catalog.note_count()

        def load() -> set[str]:
            if len(paths) >= WIDE_SHARE * total:  # most notes: every id, those of others dropped
                every = self.catalog.all_chunk_ids()
                return {cid for cid in every if cid.rpartition("#")[0] in paths}
            by_path = self.catalog.chunk_ids_by_path(paths=set(paths))
            return set().union(*by_path.values())

        return Allowed(generation, ChunkIds(paths, total, load), paths)
