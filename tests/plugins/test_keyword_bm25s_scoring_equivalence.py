"""The bm25s index's segment scoring ranks exactly as the scoring it replaced (issue 21's faster
scoring: positions cast to intp per token, masks read at the candidates only, filter masks built
by a scan, none when all pass): a frozen copy of the previous ``_search_segment``, ``_pruned`` and
filter mask is the reference, over a few hundred random queries on random notes, with tombstones,
filter masks, and the pruned selection forced on and off, for every bm25s method. Same chunks,
same order, the same floats; and the same again after a reopen, which searches main's positions
as saved (uint16) instead of bm25s's int32."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from reme_core.components import ComponentContext
from reme_core.testing.keyword_index import make_chunks
from reme_plugins.keyword_bm25s import Bm25sKeywordIndex, scoring


def _old_search_segment(seg, ids, tokens, limit, alive, allowed, prune_above):
    token_ids = seg.token_ids(tokens)
    if not token_ids:
        return []
    data, indices, indptr = seg.data, seg.indices, seg.indptr
    scores = np.zeros(seg.n_docs, dtype=data.dtype)
    present = np.zeros(seg.n_docs, dtype=bool)
    for t in token_ids:
        start, end = int(indptr[t]), int(indptr[t + 1])
        docs = indices[start:end]
        scores[docs] += data[start:end]
        present[docs] = True
    if alive is not None:
        present &= alive
    if allowed is not None:
        present &= allowed
    candidates = np.flatnonzero(present)
    if candidates.size == 0:
        return []
    k = min(limit, candidates.size)
    if candidates.size > prune_above and k < candidates.size:
        candidates = _old_pruned(seg, token_ids, scores, present, candidates, k)
    found = scores[candidates]
    if seg.nonoccurrence is not None:
        found += seg.nonoccurrence[token_ids].sum()
    top = np.argpartition(-found, k - 1)[:k] if k < candidates.size else np.arange(k)
    return [(ids[int(candidates[i])], float(found[i])) for i in top]


def _old_mask(ids, allowed_ids):
    if allowed_ids is None:
        return None
    positions = {cid: i for i, cid in enumerate(ids)}
    mask = np.zeros(len(ids) + 1, dtype=bool)
    mask[[positions.get(cid, len(ids)) for cid in allowed_ids]] = True
    return mask[: len(ids)]


def _old_pruned(seg, token_ids, scores, present, candidates, k):
    indptr, indices = seg.indptr, seg.indices
    lists = sorted((int(indptr[t + 1] - indptr[t]), t) for t in set(token_ids))
    budget = max(candidates.size // 4, k)
    parts = []
    taken = 0
    for length, t in lists:
        if parts and taken + length > budget:
            break
        parts.append(indices[int(indptr[t]) : int(indptr[t + 1])])
        taken += length
    seeds = np.unique(np.concatenate(parts))
    seeds = seeds[present[seeds]]
    if seeds.size < k:
        return candidates
    seed_scores = scores[seeds]
    threshold = np.partition(seed_scores, seed_scores.size - k)[seed_scores.size - k]
    return candidates[scores[candidates] >= threshold]


_COMMON = ["meeting", "review", "project", "deploy", "budget", "garden", "coffee", "travel"]


def _note(rng: random.Random, words: list[str], i: int) -> str:
    n = rng.choice((4, 10, 25, 60, 120))
    body = [rng.choice(_COMMON) if rng.random() < 0.3 else rng.choice(words) for _ in range(n)]
    return " ".join([*body, f"own{i}"])


@pytest.mark.parametrize("method", ["lucene", "robertson", "atire", "bm25l", "bm25+"])
def test_segment_scoring_ranks_as_the_previous_scoring(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    rng = random.Random(method)
    words = [f"w{i}" for i in range(300)]
    state = tmp_path / ".reme"
    ix = Bm25sKeywordIndex(
        Bm25sKeywordIndex.Settings(method=method),
        ComponentContext(workspace=tmp_path, state_dir=state),
    )
    try:
        for i in range(600):
            path = f"notes/n{i:03d}.md"
            ix.upsert(path, make_chunks(path, _note(rng, words, i)))
        ix.optimize()
        for i in rng.sample(range(600), 60):  # edits: tombstones in main, chunks in the delta
            path = f"notes/n{i:03d}.md"
            ix.upsert(path, make_chunks(path, _note(rng, words, i)))
        ix.refresh()
        view = ix._view
        assert view is not None and view.main.seg is not None and view.delta is not None
        assert view.main_live < len(view.main.ids)
        all_ids = [*view.main.ids, *view.delta.ids]
        segments = [
            (view.main.seg, view.main.ids, view.alive, view.main, lambda: view.main.pos),
            (view.delta.seg, view.delta.ids, None, view.delta, lambda: view.delta.pos),
        ]
        checked = 0
        for q in range(300):
            query = " ".join(
                rng.choice(_COMMON) if rng.random() < 0.4 else rng.choice(words)
                for _ in range(rng.randint(1, 6))
            )
            tokens = ix.tokenizer(query)
            limit = rng.choice((1, 5, 25, 100))
            # no filter, a third of the chunks, a few, all of them (no mask at all)
            share = (None, 3, 40, 1)[q % 4]
            allowed_ids = None if share is None else set(rng.sample(all_ids, len(all_ids) // share))
            for prune_above in (0, 10**9):  # the pruned selection and the exhaustive one
                monkeypatch.setattr(scoring, "_PRUNE_ABOVE", prune_above)
                for seg, ids, alive, owner, pos in segments:
                    allowed = ix._masks.get(owner, ids, pos, allowed_ids)
                    got = scoring._search_segment(seg, ids, tokens, limit, alive, allowed)
                    old_allowed = _old_mask(ids, allowed_ids)
                    want = _old_search_segment(
                        seg, ids, tokens, limit, alive, old_allowed, prune_above
                    )
                    assert got == want, (query, limit, prune_above)
                    checked += bool(want)
        assert checked > 500  # most queries match something

        ix.flush()
        reopened = Bm25sKeywordIndex(
            Bm25sKeywordIndex.Settings(method=method),
            ComponentContext(workspace=tmp_path, state_dir=state),
        )
        try:
            queries = [" ".join(rng.sample([*_COMMON, *words[:40]], 3)) for _ in range(100)]
            for query in queries:
                assert reopened.search(query, 25) == ix.search(query, 25), query
            view = reopened._view
            assert view is not None and view.main.seg is not None
            assert view.main.seg.indices.dtype == np.uint16
        finally:
            reopened.close()
    finally:
        ix.close()
