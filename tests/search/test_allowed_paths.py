"""The allowed set as note paths (``ChunkIds``, ``filters.allowed_paths``) answers exactly what the
chunk-id computation did (``allowed_reference``), for random filters over notes of random status, date, tags and expiry, and
every arm ranks the same with it; the default filters' first search builds no chunk id (issue 21).
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import FAKE_VECTORS

from reme_core.runtime import Reme
from reme_core.schema import SearchFilters
from reme_core.search.allowed import AllowedCache, ChunkIds
from reme_core.search.filters import allowed_paths
from tests.search.allowed_reference import reference_by_path

TODAY = dt.date(2026, 12, 3)
POLICY = {"sessions/": dt.timedelta(days=30)}
WORDS = ["otter", "badger", "heron", "lynx", "marten", "stoat", "vole", "weasel"]
FOLDERS = ["daily/2026-11-20", "digest/wiki", "sessions", "resource/misc"]
STATUSES = ["active", "archived", "superseded"]


def _note(rng: random.Random, i: int) -> str:
    front = []
    if rng.random() < 0.3:
        front.append(f"status: {rng.choice(STATUSES)}")
    if rng.random() < 0.6:
        front.append(f"date: 2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}")
    if rng.random() < 0.5:
        front.append(f"tags: [{', '.join(rng.sample(['pets', 'pets/cats', 'work'], 2))}]")
    if rng.random() < 0.2:
        front.append(f"expires: {rng.choice(['2026-11-01', '2027-02-01', '10d', '400d'])}")
    head = "---\n" + "\n".join(front) + "\n---\n\n" if front else ""
    sections = []
    for s in range(rng.randint(1, 3)):
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12)))
        sections.append(f"## Part {s} of note {i}\n\n{words} note{i}\n")
    return head + f"# Note {i}\n\n" + "\n".join(sections)


@pytest.fixture
def reme(root: Path, default_plugins) -> Iterator[Reme]:
    rng = random.Random(21)
    for i in range(60):
        rel = f"{FOLDERS[i % len(FOLDERS)]}/note-{i}.md"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(_note(rng, i), encoding="utf-8")
    (root / "digest/wiki/empty.md").write_text("---\nstatus: active\n---\n", encoding="utf-8")
    opened = Reme.open(root, plugins=default_plugins, env={}, overrides=FAKE_VECTORS)
    opened.index()
    try:
        yield opened
    finally:
        opened.close()


def _random_filters(rng: random.Random) -> SearchFilters:
    kwargs: dict = {"statuses": rng.sample(STATUSES, rng.randint(1, 3))}
    if rng.random() < 0.3:
        kwargs["since"] = dt.date(2026, rng.randint(1, 12), 1)
    if rng.random() < 0.3:
        kwargs["until"] = dt.date(2026, rng.randint(6, 12), 28)
    if rng.random() < 0.3:
        kwargs["tags"] = rng.sample(["pets", "pets/cats", "work"], rng.randint(1, 2))
        kwargs["tag_mode"] = rng.choice(["any", "all"])
    if rng.random() < 0.3:
        kwargs["paths"] = rng.sample(["digest/**", "sessions/", "daily/*/*.md", "nope/"], 1)
    if kwargs.get("since") and kwargs.get("until") and kwargs["since"] > kwargs["until"]:
        del kwargs["until"]
    return SearchFilters(**kwargs)


def _old(reme: Reme, filters: SearchFilters) -> dict[str, list[str]]:
    return reference_by_path(
        filters, reme.catalog, reme.tags, today=TODAY, policy=POLICY, modified=lambda _: None
    )


def test_random_filters_allow_what_the_chunk_id_computation_allowed(reme: Reme) -> None:
    cache = AllowedCache(
        reme.catalog, reme.tags, lambda: TODAY, policy=POLICY, modified=lambda _: None
    )
    every = reme.catalog.all_chunk_ids()
    rng = random.Random(5)
    filter_sets = [SearchFilters(), *(_random_filters(rng) for _ in range(60))]
    kinds = set()
    for filters in filter_sets:
        old = _old(reme, filters)
        old_ids = set().union(*old.values())
        answer = cache.get(filters)
        assert isinstance(answer.ids, ChunkIds)
        kinds.add(answer.ids.wide)
        assert answer.paths == set(old), filters
        expiry = {"today": TODAY, "policy": POLICY, "modified": lambda _: None}
        assert allowed_paths(filters, reme.catalog, reme.tags, **expiry) == set(old), filters
        assert {cid for cid in every if cid in answer.ids} == old_ids, filters
        assert bool(answer.ids) == bool(old_ids)
        assert answer.ids == old_ids and len(answer.ids) == len(old_ids)
        assert "digest/wiki/empty.md" not in answer.paths  # no chunk: never allowed
        assert "no-such.md#0" not in answer.ids and 7 not in answer.ids
        for arm in reme.searcher.arms:
            for query in ("otter heron", "note7 badger", "vole"):
                new = arm.rank(query, 10, answer.ids, filters)
                before = arm.rank(query, 10, old_ids, filters)
                assert [round(s, 5) for _, s in new] == [round(s, 5) for _, s in before]
                assert {c for c, _ in new} <= old_ids
                # The same ids wherever a score is not tied with the last one kept.
                last = before[-1][1] if before else 0.0
                assert [c for c, s in new if s > last] == [c for c, s in before if s > last]
    assert kinds == {True, False}  # both the unfiltered-then-dropped and the masked ways ran


def test_the_default_first_search_builds_no_chunk_id(
    reme: Reme, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[str] = []
    for name in ("all_chunk_ids", "chunk_ids_by_path", "chunk_ids"):
        real = getattr(reme.catalog, name)
        monkeypatch.setattr(
            reme.catalog, name, lambda *a, _n=name, _r=real, **k: built.append(_n) or _r(*a, **k)
        )
    keyword = SearchFilters(statuses=["active"])
    hits = reme.search("otter heron", limit=5, filters=keyword).hits
    assert hits and all(h.path in reme.searcher._allowed.get(keyword).paths for h in hits)
    assert built == []
    # A narrow filter masks the keyword index with the ids of its few notes.
    narrow = SearchFilters(paths=["digest/wiki/note-1.md"], statuses=STATUSES)
    hits = reme.search("otter heron badger", limit=5, filters=narrow).hits
    assert {h.path for h in hits} <= {"digest/wiki/note-1.md"}
    assert built == ["chunk_ids_by_path"]
