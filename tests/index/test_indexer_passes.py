"""Index passes prepared outside the exclusive lock: what they keep track of between writes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import FAKE_VECTORS, KEYWORD_ONLY_ENV

from reme_core.plugins import Plugins
from reme_core.runtime import Reme

PERF = "daily/2026-11-10/session-perf-tuning.md"


@pytest.fixture
def reme(workspace: Path, default_plugins: Plugins) -> Iterator[Reme]:
    with Reme.open(workspace, plugins=default_plugins, env=KEYWORD_ONLY_ENV) as opened:
        opened.index()
        yield opened


def test_a_link_resolves_again_when_its_deleted_target_comes_back(reme: Reme) -> None:
    source, target = "digest/wiki/caching.md", "digest/wiki/redis-cache.md"
    reme.files.write(source, "# Caching\n\nSee [[redis-cache]].\n")
    for _ in range(2):
        reme.files.write(target, "# Redis cache\n\nTTL of five minutes.\n")
        assert [link.target for link in reme.graph.outbound(source)] == [target]
        reme.files.delete(target)
        assert [link.state for link in reme.graph.outbound(source)] == ["missing"]
    # A link written after the last deletion is tracked too.
    reme.files.write("digest/wiki/later.md", "# Later\n\nSee [[redis-cache]] as well.\n")
    reme.files.write(target, "# Redis cache\n\nBack again.\n")
    inbound = {link.source for link in reme.graph.inbound(target)}
    assert inbound == {source, "digest/wiki/later.md"}
    assert not [link for link in reme.graph.unresolved() if link.raw == "redis-cache"]


def test_an_update_that_changes_nothing_leaves_readers_alone(reme: Reme) -> None:
    # Holding the read lock here would make an exclusive hold in this thread raise.
    with reme.indexer.lock.read():
        report = reme.indexer.update([PERF, "digest/wiki/not-there.md"])
    assert report.indexed == [] and report.removed == []
    assert report.unchanged == reme.catalog.counts()["files"]


def test_a_note_that_stops_being_indexable_loses_its_vectors(
    workspace: Path, default_plugins: Plugins
) -> None:
    with Reme.open(workspace, plugins=default_plugins, env={}, overrides=FAKE_VECTORS) as reme:
        reme.index()
        path = "digest/wiki/okapi.md"
        reme.files.write(path, "# Okapi\n\nThe okapi lives in the Ituri forest.\n")
        assert any(cid.startswith(f"{path}#") for cid in reme.vectors.store.ids())
        (workspace / path).write_bytes(b"# Okapi\n\n\xff\xfe not UTF-8\n")
        report = reme.indexer.update([path])
        assert path in report.problems
        assert not any(cid.startswith(f"{path}#") for cid in reme.vectors.store.ids())
        status = reme.status()["vectors"]
        assert status["embedded"] == status["total"] and status["last_error"] is None


def test_a_rebuild_reports_every_file_and_keeps_search_working(reme: Reme) -> None:
    before = [hit.path for hit in reme.search("orjson", limit=5).hits]
    report = reme.reindex()
    assert report.problems == {} and report.removed == []
    assert len(report.indexed) == reme.catalog.counts()["files"]
    assert [hit.path for hit in reme.search("orjson", limit=5).hits] == before


def test_a_pass_drops_what_it_parsed_once_every_projection_holds_it(
    workspace: Path, default_plugins: Plugins, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reme_core.index.indexer import Indexer
    from reme_core.index.prepare import Plan

    applied: list[Plan] = []
    apply = Indexer._apply

    def keeping(self: Indexer, plan: Plan):  # type: ignore[no-untyped-def]
        applied.append(plan)
        return apply(self, plan)

    monkeypatch.setattr(Indexer, "_apply", keeping)
    with Reme.open(workspace, plugins=default_plugins, env=KEYWORD_ONLY_ENV) as reme:
        report = reme.index()
        assert PERF in report.indexed
        files = [f for plan in applied for f in plan.files]
        assert PERF in {f.path for f in files}
        assert all(f.text is None and f.chunks == [] and f.summary is None for f in files)
        assert all(f.links is None for f in files)
        # ... and what the projections hold is whole: chunk texts, the keyword arm, the graph.
        assert reme.catalog.counts()["files"] == len(report.indexed)
        assert any(h.path == PERF for h in reme.search("perf tuning", limit=10).hits)
        rows = reme.catalog.chunk_rows([PERF])
        assert rows and all(text for _, _, text in rows)
