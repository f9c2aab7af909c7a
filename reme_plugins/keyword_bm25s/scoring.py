"""Scoring one segment: bm25s's sums over the query tokens' postings, then the top k.

A search scores both segments from bm25s's precomputed score matrix (a CSC matrix per segment:
the postings of each query token, summed per chunk in float32, exactly as bm25s sums them), only
over chunks that hold a query token and pass the tombstone and filter masks, then takes the top k
of those; the index merges the segments' hits by score. Scoring needs numpy alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from itertools import repeat

import numpy as np

from reme_plugins.keyword_bm25s.segments import _Segment


def _search_segment(
    seg: _Segment,
    ids: list[str],
    tokens: Iterable[str],
    limit: int,
    alive: np.ndarray | None,
    allowed: np.ndarray | None,
) -> list[tuple[str, float]]:
    """Top ``limit`` of one segment among chunks that contain a query token and pass the masks.

    Scores are bm25s's (``BM25.get_scores_from_ids``): each query token's postings added in
    float32, token by token, plus bm25l/bm25+'s per-token baseline; only the chunks that can be
    returned are then looked at, so a filtered-out chunk never takes a slot.
    """
    token_ids = seg.token_ids(tokens)
    if not token_ids:
        return []
    data, indices, indptr = seg.data, seg.indices, seg.indptr
    scores = np.zeros(seg.n_docs, dtype=data.dtype)
    present = np.zeros(seg.n_docs, dtype=bool)
    for t in token_ids:
        start, end = int(indptr[t]), int(indptr[t + 1])
        # Indexing with intp is numpy's fast path; with the stored int32 every scatter below
        # converts the positions itself, and that was most of the scoring time.
        docs = indices[start:end].astype(np.intp)
        scores[docs] += data[start:end]  # a chunk appears once per token: no repeated index
        present[docs] = True
    candidates = np.flatnonzero(present)
    # The masks are read at the candidates only (a few thousand), not over every chunk.
    if alive is not None:
        candidates = candidates[alive[candidates]]
    if allowed is not None:
        candidates = candidates[allowed[candidates]]
    if candidates.size == 0:
        return []
    k = min(limit, candidates.size)
    if candidates.size > _PRUNE_ABOVE and k < candidates.size:
        candidates = _pruned(seg, token_ids, scores, alive, allowed, candidates, k)
    found = scores[candidates]
    if seg.nonoccurrence is not None:
        found += seg.nonoccurrence[token_ids].sum()  # the same for every chunk: order kept
    top = np.argpartition(-found, k - 1)[:k] if k < candidates.size else np.arange(k)
    return [(ids[int(candidates[i])], float(found[i])) for i in top]


_PRUNE_ABOVE = 4096
"""Candidates above which the top k is chosen from a pruned set: a query with a common word
("review" is in half the chunks) made the selection over every candidate its slowest part."""


def _pruned(
    seg: _Segment,
    token_ids: list[int],
    scores: np.ndarray,
    alive: np.ndarray | None,
    allowed: np.ndarray | None,
    candidates: np.ndarray,
    k: int,
) -> np.ndarray:
    """The candidates that can still be in the top ``k``: those scoring at least the k-th best
    score among the chunks of the query's rarer tokens (a subset of the candidates, so that
    score is at most the true k-th best: nothing of the true top k is dropped, ties included)."""
    indptr, indices = seg.indptr, seg.indices
    lists = sorted((int(indptr[t + 1] - indptr[t]), t) for t in set(token_ids))
    budget = max(candidates.size // 4, k)
    # The seeds as a mask, then its positions: the sorted distinct chunks np.unique gave, without
    # np.unique's import of numpy.ma (~20 ms of the first search that prunes).
    seen = np.zeros(seg.n_docs, dtype=bool)
    taken = 0
    for used, (length, t) in enumerate(lists):
        if used and taken + length > budget:
            break
        seen[indices[int(indptr[t]) : int(indptr[t + 1])].astype(np.intp)] = True
        taken += length
    seeds = np.flatnonzero(seen)
    if alive is not None:
        seeds = seeds[alive[seeds]]
    if allowed is not None:
        seeds = seeds[allowed[seeds]]
    if seeds.size < k:
        return candidates
    seed_scores = scores[seeds]
    threshold = np.partition(seed_scores, seed_scores.size - k)[seed_scores.size - k]
    return candidates[scores[candidates] >= threshold]


_MAP_BELOW = 8
"""A filter set smaller than a segment's chunks over this is mapped through the segment's
positions; a larger one is answered by a scan of the segment's ids (no positions needed)."""


class _AllowedMasks:
    """Boolean masks of filter sets over segments, the last eight (segment, set) pairs kept."""

    def __init__(self) -> None:
        self._cache: list[tuple[object, set[str], np.ndarray | None]] = []

    def get(
        self,
        segment: object,
        ids: Sequence[str],
        pos: Callable[[], dict[str, int]],
        allowed_ids: set[str] | None,
    ) -> np.ndarray | None:
        """A boolean mask of ``allowed_ids`` over one segment (None: every chunk of it passes),
        cached per (segment, set) pair.

        Callers reuse one set object per filter (the search engine caches it), and building the
        mask walks every allowed id: on 50k chunks that was most of a query's time. The default
        filters allow nearly every chunk: that mask is a scan of the segment's ids (a
        position map of 57k ids cost the first search at 10k notes ~25 ms more), and when it
        passes every chunk there is no mask at all.
        """
        if allowed_ids is None:
            return None
        for cached_segment, cached_ids, mask in self._cache:
            if cached_segment is segment and cached_ids is allowed_ids:
                return mask
        n_docs = len(ids)
        if len(allowed_ids) * _MAP_BELOW < n_docs:
            positions = pos()
            # ids this segment lacks land on the extra slot
            mask = np.zeros(n_docs + 1, dtype=bool)
            mask[np.fromiter(map(positions.get, allowed_ids, repeat(n_docs)), np.int64)] = True
            mask = mask[:n_docs]
        else:
            mask = np.fromiter(map(allowed_ids.__contains__, ids), bool, n_docs)
        kept = None if mask.all() else mask
        # Holding the objects keeps their identities valid for the cache's lifetime. Searches
        # run this concurrently: the list is replaced, never changed, so a reader iterates a
        # whole one (a race can only drop an entry from the cache).
        self._cache = [(segment, allowed_ids, kept), *self._cache[:7]]
        return kept
