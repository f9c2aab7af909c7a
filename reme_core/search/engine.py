"""The search entry point: filters, arms, fusion, hits, link expansion."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING

from reme_core.components import Graph, TagIndex
from reme_core.errors import SearchError
from reme_core.index.catalog import Catalog
from reme_core.schema import SearchFilters, SearchHit, SearchResponse
from reme_core.search.abstention import floors_for, no_match
from reme_core.search.allowed import AllowedCache
from reme_core.search.arm_pool import arm_pool
from reme_core.search.arms import ArmUnavailable, SearchArm
from reme_core.search.dates import rank_by_dates
from reme_core.search.expansion import expand_links
from reme_core.search.expiry import Modified, Policy
from reme_core.search.fusion import fuse

if TYPE_CHECKING:
    from reme_core.settings import SearchConfig

MAX_LIMIT = 200
KEYWORD_ARM = "keyword"


class Searcher:
    """Runs every arm over the same filtered candidate set and fuses the rankings."""

    def __init__(
        self,
        catalog: Catalog,
        arms: list[SearchArm],
        weights: dict[str, float],
        config: SearchConfig,
        *,
        graph: Graph | None = None,
        tags: TagIndex | None = None,
        degraded: list[str] | None = None,
        expire_policy: Policy | None = None,
        modified: Modified | None = None,
        today: Callable[[], dt.date] | None = None,
    ):
        self.catalog = catalog
        self.arms = arms
        self.weights = weights
        self.config = config
        self.graph = graph
        self.tags = tags
        self.degraded = list(degraded or [])
        self._allowed = AllowedCache(
            catalog, tags, today or dt.date.today, policy=expire_policy, modified=modified
        )

    def search(
        self,
        query: str,
        *,
        limit: int | None = None,
        min_score: float | None = None,
        filters: SearchFilters | None = None,
        expand: bool | None = None,
        as_of: dt.date | None = None,
    ) -> SearchResponse:
        """Rank ``query`` (checked by the caller: ``Reme.search`` or ``Reme.engine_search``);
        ``as_of`` is the day dates in the query count from (``search.date_boost``)."""
        limit = self.config.limit if limit is None else limit
        if not 1 <= limit <= MAX_LIMIT:
            raise SearchError(f"limit must be between 1 and {MAX_LIMIT}, got {limit}")
        min_score = self.config.min_score if min_score is None else min_score
        if not 0.0 <= min_score <= 1.0:
            raise SearchError(f"min_score must be between 0 and 1, got {min_score}")
        filters = filters or SearchFilters(statuses=list(self.config.statuses))
        expand = self.config.link_expansion if expand is None else expand

        # Filter sets only change when the catalog does, so repeated queries reuse them; the
        # same set object is handed to the arms each time, which lets them cache what they
        # derive from it.
        passing = self._allowed.get(filters)
        allowed, allowed_paths = passing.ids, passing.paths
        candidates = min(limit * self.config.candidate_multiplier, self.config.candidate_cap)
        results, degraded = self._run_arms(query, max(candidates, limit), allowed, filters)
        arm_scores = {arm: dict(hits) for arm, hits in results.items()}
        fused = fuse(
            results,
            self.weights,
            method=self.config.fusion,
            k=self.config.rrf_k,
            floor_rank=self.config.vector_floor_rank,
            pattern=self.config.interleave_pattern,
        )
        fused = rank_by_dates(
            query, fused, as_of, self.config.date_boost, self.config.date_slack_days, self._days
        )
        fused = [f for f in fused if f.score >= min_score][:limit]

        rows = self.catalog.hit_rows([f.chunk_id for f in fused])
        hits = []
        for f in fused:
            row = rows.get(f.chunk_id)
            if row is None:  # index and catalog disagree for a moment; never return a ghost
                continue
            hits.append(
                SearchHit(
                    chunk_id=f.chunk_id,
                    path=row.path,
                    start_line=row.start_line,
                    end_line=row.end_line,
                    score=round(f.score, 6),
                    text=row.text,
                    heading=row.heading,
                    name=row.name,
                    arm_ranks=f.ranks,
                    arm_scores={arm: round(arm_scores[arm][f.chunk_id], 6) for arm in f.ranks},
                )
            )
        if "superseded" in filters.statuses and hits:
            _mark_superseded(hits, self.catalog)
        linked = []
        if expand and self.graph is not None and hits:
            linked = expand_links(
                [h.path for h in hits],
                self.graph,
                limit_each=self.config.expansion_limit,
                allowed=allowed_paths.__contains__,
                describe=self.catalog.labels,
            )
        return SearchResponse(
            query=query,
            hits=hits,
            linked=linked,
            arms=list(results),
            degraded=[*self.degraded, *degraded],
            meaning_only=_meaning_only(results),
            no_match=not hits or no_match(results, floors_for(self._vector_model())),
        )

    def rank_arms(
        self, query: str, candidates: int, filters: SearchFilters | None = None
    ) -> dict[str, list[tuple[str, float]]]:
        """Each arm's own ranking before fusion (benchmarks compare fusion methods on these)."""
        filters = filters or SearchFilters(statuses=list(self.config.statuses))
        return self._run_arms(query, candidates, self._allowed.get(filters).ids, filters)[0]

    def warm(self) -> None:
        """Do now what the first search with the default filters would wait for: their allowed
        set (one row per note read: ~0.01 s at 10,000 notes) and the keyword arm's
        index loaded by one ranking; later searches reuse both until the catalog changes."""
        filters = SearchFilters(statuses=list(self.config.statuses))
        allowed = self._allowed.get(filters).ids
        for arm in self.arms:
            if arm.name == KEYWORD_ARM:
                arm.rank("warm up", 1, allowed, filters)

    def _vector_model(self) -> str | None:
        """The vector arm's embedding model id (the key of abstention's calibration)."""
        for arm in self.arms:
            model_id = getattr(arm, "model_id", None)
            if isinstance(model_id, str):
                return model_id
        return None

    def _days(self, paths: set[str]) -> dict[str, dt.date | None]:
        return {path: note.date for path, note in self.catalog.notes(paths).items()}

    def _run_arms(
        self, query: str, candidates: int, allowed: set[str], filters: SearchFilters
    ) -> tuple[dict[str, list[tuple[str, float]]], list[str]]:
        """Every arm's ranking (in parallel when there are several) and why any arm did not run."""
        args = (query, candidates, allowed, filters)
        # The first arm (keyword) runs in this thread while the others run in the shared pool;
        # keyword-only search starts no thread at all.
        jobs: dict[str, Future[list[tuple[str, float]]]] = {
            a.name: arm_pool().submit(a.rank, *args) for a in self.arms[1:]
        }
        results: dict[str, list[tuple[str, float]]] = {}
        degraded: list[str] = []
        for arm in self.arms:
            try:
                job = jobs.get(arm.name)
                results[arm.name] = job.result() if job is not None else arm.rank(*args)
            except ArmUnavailable as exc:
                degraded.append(f"{arm.name}: {exc}")
        if not results:
            raise SearchError("no search arm could run: " + "; ".join(degraded))
        for arm in self.arms:
            notes = getattr(arm, "notes", None)
            if arm.name in results and notes is not None:
                degraded.extend(notes())
        return results, degraded


def _mark_superseded(hits: list[SearchHit], catalog: Catalog) -> None:
    """Say on each hit of a superseded note which note replaces it (only asked when superseded
    notes were searched for: the default statuses never return one)."""
    notes = catalog.notes({hit.path for hit in hits})
    for hit in hits:
        note = notes.get(hit.path)
        if note is not None and note.status == "superseded":
            newer = note.frontmatter.get("superseded_by")
            if isinstance(newer, list):  # superseded_by: ["[[a]]"] names the first
                newer = newer[0] if newer else None
            hit.superseded_by = str(newer) if newer else "(unknown)"


def _meaning_only(results: dict[str, list[tuple[str, float]]]) -> bool:
    """The keyword arm ran and matched nothing while another arm returned candidates."""
    if KEYWORD_ARM not in results or results[KEYWORD_ARM]:
        return False
    return any(hits for arm, hits in results.items() if arm != KEYWORD_ARM)
