"""The kit's own reference vector store answers exactly: the records ``matches`` passes, best
cosine first, and it agrees with the shipped ``local`` store it replaced as the reference."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pytest

from reme_core.components import ComponentContext, VectorRecord
from reme_core.errors import RemeError
from reme_core.schema import SearchFilters
from reme_core.search.record_filters import expand_tags, matches
from reme_core.testing.reference_store import ReferenceStore
from reme_core.testing.vector_store import ALL, CORPUS, DIM, unit
from reme_plugins.vector_local import LocalFileStore

FILTERS = [
    None,
    SearchFilters(statuses=ALL),
    SearchFilters(statuses=["active"], tags=["Project"]),
    SearchFilters(statuses=ALL, tags=["project/reme", "meeting"], tag_mode="all"),
    SearchFilters(statuses=ALL, paths=["daily"], since=dt.date(2024, 1, 1)),
    SearchFilters(statuses=ALL, paths=["digest/**/*.md"], until=dt.date(2024, 1, 1)),
]


def _records() -> list[VectorRecord]:
    vecs = unit(np.random.default_rng(3), 2 * len(CORPUS))
    return [
        VectorRecord(f"{path}#{j}", path, vecs[2 * i + j], status, date, tags)
        for i, (path, status, date, tags) in enumerate(CORPUS)
        for j in range(2)
    ]


@pytest.mark.parametrize("filters", FILTERS)
def test_search_is_every_passing_record_by_cosine(filters: SearchFilters | None) -> None:
    store = ReferenceStore()
    store.open("m", DIM)
    records = _records()
    store.upsert(records)
    query = unit(np.random.default_rng(9), 1)[0]
    passing = [r for r in records if matches(filters, r.path, r.status, r.date, r.tags)]
    expected = sorted(passing, key=lambda r: -float(r.vector @ query))
    hits = store.search(query, 100, filters)
    assert [cid for cid, _ in hits] == [r.chunk_id for r in expected]
    assert [s for _, s in hits] == pytest.approx(
        [float(r.vector @ query) for r in expected], abs=1e-5
    )


@pytest.mark.parametrize("filters", FILTERS)
def test_agrees_with_the_local_store(filters: SearchFilters | None, tmp_path: Path) -> None:
    ref, local = (
        ReferenceStore(),
        LocalFileStore(
            LocalFileStore.Settings(), ComponentContext(workspace=tmp_path, state_dir=tmp_path)
        ),
    )
    for store in (ref, local):
        store.open("m", DIM)
        store.upsert(_records())
    try:
        for query in unit(np.random.default_rng(11), 5):
            assert [h[0] for h in ref.search(query, 4, filters)] == [
                h[0] for h in local.search(query, 4, filters)
            ]
    finally:
        local.close()


def test_upsert_replace_delete_and_clear() -> None:
    store = ReferenceStore()
    store.open("m", DIM)
    a, b = unit(np.random.default_rng(1), 2)
    store.upsert([VectorRecord("x#0", "x.md", a, tags=("Project/ReMe",))])
    store.upsert([VectorRecord("x#0", "x.md", b, tags=("Project/ReMe",))])
    assert store.ids() == {"x#0"}
    assert store.search(b, 1) == [("x#0", pytest.approx(1.0, abs=1e-5))]
    assert store.search(b, 1, SearchFilters(tags=["project"])) == store.search(b, 1)
    assert expand_tags(["Project/ReMe"]) == ("project", "project/reme")
    store.delete_paths(["x.md"])
    assert store.ids() == set()
    store.upsert([VectorRecord("y#0", "y.md", a)])
    store.clear()
    assert store.search(a, 3) == []
    with pytest.raises(RemeError, match="dim"):
        store.upsert([VectorRecord("w#0", "w.md", np.ones(DIM + 1, dtype=np.float32))])
