"""A first index parses each file just before applying it (``Plan.pending``), so it never holds
every parsed note at once; what it indexes is what an eager pass indexes. Later scans and
rebuilds (a catalog with something to serve) still parse before the exclusive hold."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import FAKE_VECTORS

from reme_core.index.prepare import FilePreparation
from reme_core.plugins import Plugins
from reme_core.runtime import Reme


def _indexed(reme: Reme) -> tuple[object, ...]:
    catalog = reme.catalog
    paths = sorted(catalog.file_stamps())
    notes = catalog.notes(paths)
    rows = catalog.chunk_rows()
    hits = [
        [(h.chunk_id, round(h.score, 6)) for h in reme.search(q, limit=5).hits]
        for q in ("redis cache", "deploy", "okapi forest")
    ]
    vectors = sorted(reme.vectors.store.ids()) if reme.vectors is not None else []
    links = {p: [(ln.target, ln.state) for ln in reme.graph.outbound(p)] for p in paths}
    return paths, {p: n.model_dump() for p, n in notes.items()}, rows, hits, vectors, links


def test_a_first_index_parses_each_file_only_when_it_applies_it(
    workspace: Path, default_plugins: Plugins, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[tuple[str, str]] = []
    prepare_file = FilePreparation._prepare_file

    def recording(self, path, data, file_stat):  # type: ignore[no-untyped-def]
        events.append(("parse", path))
        return prepare_file(self, path, data, file_stat)

    with Reme.open(workspace, plugins=default_plugins, env={}, overrides=FAKE_VECTORS) as reme:
        put = reme.indexer._put
        monkeypatch.setattr(FilePreparation, "_prepare_file", recording)
        monkeypatch.setattr(
            reme.indexer,
            "_put",
            lambda prepared: (events.append(("put", prepared.path)), put(prepared)),
        )
        reme.indexer.scan()
        parsed = [p for kind, p in events if kind == "parse"]
        assert len(parsed) > 3
        # parse a, put a, parse b, put b, ...: never two parsed files waiting to be applied
        assert events == [event for path in parsed for event in (("parse", path), ("put", path))]
        # with something to serve, a scan parses its changed files before the hold again
        events.clear()
        changed = parsed[:2]
        for path in changed:
            (workspace / path).write_text("# Changed\n\nNew text.\n", encoding="utf-8")
        reme.indexer.scan()
        assert sorted(events) == sorted(
            [*(("parse", p) for p in changed), *(("put", p) for p in changed)]
        )
        assert [kind for kind, _ in events] == ["parse", "parse", "put", "put"]


def test_a_scan_indexes_what_an_eager_update_of_every_file_indexes(
    workspace: Path, default_plugins: Plugins, tmp_path: Path
) -> None:
    other = tmp_path / "eager"
    shutil.copytree(workspace, other)
    with Reme.open(workspace, plugins=default_plugins, env={}, overrides=FAKE_VECTORS) as lazy:
        report = lazy.index()
        assert report.indexed and not lazy.index().indexed  # the next scan finds nothing
        scanned = _indexed(lazy)
    with Reme.open(other, plugins=default_plugins, env={}, overrides=FAKE_VECTORS) as eager:
        every = eager.indexer.scope_files()
        eager.indexer.update(every)  # prepares every file before applying (Plan.files)
        eager.vectors.reconcile()
        assert sorted(every) == sorted(report.indexed)
        assert _indexed(eager) == scanned
