"""The chunk ids each filter set allows, kept current as the catalog changes.

Computing them reads every chunk row (tens of milliseconds on a large workspace), and every write
changes the catalog. So each filter set keeps its last answer, and after a write only the paths
the catalog reports changed are looked up again; and when several searches need the same answer
at once, one computes it while the others wait for it, instead of each computing it.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

from reme_core.components import TagIndex
from reme_core.index.catalog import Catalog
from reme_core.schema import SearchFilters
from reme_core.search.expiry import Modified, Policy
from reme_core.search.filters import allowed_by_path

MAX_FILTER_SETS = 8


@dataclass(frozen=True)
class Allowed:
    """Chunk ids and note paths passing one filter set, as of one catalog generation.

    Arms may cache what they derive from ``ids`` by identity: a new answer is a new set object.
    """

    generation: int
    ids: set[str]
    paths: set[str]
    by_path: dict[str, list[str]]


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
        if known is None or changed is None or len(changed) > max(64, len(known.by_path) // 4):
            by_path = allowed_by_path(
                filters,
                self.catalog,
                self.tags,
                today=today,
                policy=self.policy,
                modified=self.modified,
            )
            return Allowed(generation, set().union(*by_path.values()), set(by_path), by_path)
        # Only the changed paths: drop what they allowed, add what they allow now.
        fresh = allowed_by_path(
            filters,
            self.catalog,
            self.tags,
            within=changed,
            today=today,
            policy=self.policy,
            modified=self.modified,
        )
        ids = set(known.ids)
        by_path = dict(known.by_path)
        for path in changed:
            ids.difference_update(by_path.pop(path, ()))
        for path, cids in fresh.items():
            by_path[path] = cids
            ids.update(cids)
        return Allowed(generation, ids, set(by_path), by_path)
