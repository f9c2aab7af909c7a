"""Conformance suite for ``FileStore`` (vector store) implementations.

Use it from a plugin's tests by subclassing and overriding one fixture::

    class TestMyStore(VectorStoreConformance):
        store_class = "my_plugin.store:MyStore"      # importable, for the crash test's child

        @pytest.fixture
        def make_store(self, state_dir):
            context = ComponentContext(workspace=state_dir.parent, state_dir=state_dir)
            return lambda: MyStore(MyStore.Settings(), context)

``make_store`` returns a factory; every call builds a fresh, unopened instance over the same
``state_dir``, so tests can close and reopen. Vectors are seeded numpy randoms, not a model.
``approximate_after_optimize`` lets an ANN store fall back to recall@10 >= 0.9 after
``optimize()``; before it every store must agree exactly with the kit's exact ``ReferenceStore``.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from reme_core.components import FileStore, VectorRecord
from reme_core.errors import RemeError
from reme_core.schema import SearchFilters
from reme_core.search.record_filters import matches
from reme_core.testing.reference_store import ReferenceStore

StoreFactory = Callable[[], FileStore]
MODEL = "test/random-64"
DIM = 16
ALL = ["active", "archived", "superseded"]
REPO_ROOT = Path(__file__).resolve().parents[2]


def unit(rng: np.random.Generator, n: int, dim: int = DIM) -> np.ndarray:
    x = rng.standard_normal((n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def vector_for(chunk_id: str, dim: int = DIM) -> np.ndarray:
    """A fixed unit vector per id, so a reader can check a record holds the right vector."""
    seed = int.from_bytes(chunk_id.encode()[:32].ljust(32, b"\0"), "little") % (2**63)
    return unit(np.random.default_rng(seed + len(chunk_id)), 1, dim)[0]


def rec(chunk_id: str, path: str, vector: np.ndarray, **kw: Any) -> VectorRecord:
    return VectorRecord(chunk_id=chunk_id, path=path, vector=vector, **kw)


CORPUS = [  # path, status, date, tags (already ancestor-expanded, as the indexer hands them)
    ("daily/2024-01-05/a.md", "active", "2024-01-05", ("project", "project/reme", "meeting")),
    ("daily/2024-02-10/b.md", "archived", "2024-02-10", ("project",)),
    ("daily2/c.md", "active", None, ("meeting",)),
    (
        "digest/wiki/d.md",
        "superseded",
        "2023-12-31",
        ("project", "project/reme", "project/reme/v2"),
    ),
    ("digest/wiki/e.md", "active", "2024-03-01", ()),
    ("resource/f.md", "active", None, ("projects",)),
]


class VectorStoreConformance:
    """The ``FileStore`` contract. Not collected by itself (no ``Test`` prefix): subclass it."""

    store_class: ClassVar[str] = ""
    """``module:Class`` the crash test's child process imports."""
    store_settings: ClassVar[dict[str, Any]] = {}
    approximate_after_optimize: ClassVar[bool] = False
    approximate_always: ClassVar[bool] = False
    """An ANN-only store (chromadb searches HNSW from the first insert): recall@10 >= 0.98
    against the exact reference before ``optimize()`` instead of identical top-10 lists."""

    @pytest.fixture
    def state_dir(self, tmp_path: Path) -> Path:
        return tmp_path / ".reme"

    @pytest.fixture
    def make_store(self, state_dir: Path) -> StoreFactory:
        """Override: a factory building the store under test over ``state_dir``."""
        raise NotImplementedError("subclasses of VectorStoreConformance must override make_store")

    @pytest.fixture
    def store(self, make_store: StoreFactory) -> Iterator[FileStore]:
        s = make_store()
        s.open(MODEL, DIM)
        yield s
        s.close()

    @pytest.fixture
    def corpus(self, store: FileStore) -> dict[str, np.ndarray]:
        """Two chunks per corpus note; returns chunk id -> vector."""
        rng = np.random.default_rng(7)
        vecs = unit(rng, 2 * len(CORPUS))
        records, out = [], {}
        for i, (path, status, date, tags) in enumerate(CORPUS):
            for j in range(2):
                cid = f"{path}#{j}"
                out[cid] = vecs[2 * i + j]
                records.append(rec(cid, path, out[cid], status=status, date=date, tags=tags))
        store.upsert(records)
        return out

    # -- basics ------------------------------------------------------------------------------

    def test_empty_store(self, store: FileStore) -> None:
        assert store.ids() == set()
        assert store.search(unit(np.random.default_rng(0), 1)[0], 5) == []

    def test_search_finds_nearest_best_first_with_cosine(
        self, store: FileStore, corpus: dict[str, np.ndarray]
    ) -> None:
        for cid, vec in corpus.items():
            hits = store.search(vec, 3)
            assert hits[0][0] == cid
            assert hits[0][1] == pytest.approx(1.0, abs=1e-4)
            assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
            for other, score in hits:
                assert score == pytest.approx(float(corpus[other] @ vec), abs=1e-4)

    def test_limit(self, store: FileStore, corpus: dict[str, np.ndarray]) -> None:
        q = next(iter(corpus.values()))
        assert len(store.search(q, 5)) == 5
        assert len(store.search(q, 100)) == len(corpus)
        assert store.search(q, 0) == []

    def test_upsert_replaces_by_chunk_id(self, store: FileStore) -> None:
        rng = np.random.default_rng(1)
        a, b = unit(rng, 2)
        store.upsert([rec("x.md#0", "x.md", a)])
        store.upsert([rec("x.md#0", "x.md", b, status="archived")])
        assert store.ids() == {"x.md#0"}
        hits = store.search(b, 5)
        assert hits == [("x.md#0", pytest.approx(1.0, abs=1e-4))]
        assert store.search(b, 5, SearchFilters(statuses=["active"])) == []

    def test_moving_a_chunk_to_another_path(self, store: FileStore) -> None:
        v = unit(np.random.default_rng(2), 1)[0]
        store.upsert([rec("c#0", "old.md", v)])
        store.upsert([rec("c#0", "new.md", v)])
        store.delete_paths(["old.md"])
        assert store.ids() == {"c#0"}
        assert [h[0] for h in store.search(v, 1, SearchFilters(paths=["new.md"]))] == ["c#0"]

    def test_delete_paths(self, store: FileStore, corpus: dict[str, np.ndarray]) -> None:
        store.delete_paths(["daily2/c.md", "resource/f.md", "not/there.md"])
        left = {c for c in corpus if not c.startswith(("daily2/", "resource/"))}
        assert store.ids() == left
        for _cid, vec in corpus.items():
            assert {h[0] for h in store.search(vec, 20)} == left

    def test_clear(self, store: FileStore, corpus: dict[str, np.ndarray]) -> None:
        store.clear()
        assert store.ids() == set()
        v = unit(np.random.default_rng(3), 1)[0]
        store.upsert([rec("z#0", "z.md", v)])
        assert store.search(v, 3)[0][0] == "z#0"

    def test_wrong_dimension_is_refused(self, store: FileStore) -> None:
        with pytest.raises(RemeError, match="dim"):
            store.upsert([rec("w#0", "w.md", np.ones(DIM + 1, dtype=np.float32))])
        with pytest.raises(RemeError, match="dim"):
            store.search(np.ones(DIM - 1, dtype=np.float32), 3)
        assert store.ids() == set()

    def test_awkward_paths_and_tags(self, store: FileStore) -> None:
        paths = ["it's.md", 'q"uote/a.md', "back/sl\\ash.md", "100%/c.md", "a_b/d.md", "日本/e.md"]
        vecs = unit(np.random.default_rng(4), len(paths))
        store.upsert(
            [
                rec(f"{p}#0", p, v, tags=("it's", "100%", "a_b", "~7e"))
                for p, v in zip(paths, vecs, strict=True)
            ]
        )
        for p, v in zip(paths, vecs, strict=True):
            folder = p.rsplit("/", 1)[0] if "/" in p else p
            assert [h[0] for h in store.search(v, 10, SearchFilters(paths=[folder]))] == [f"{p}#0"]
        probe = vecs[0]
        for tag in ["it's", "100%", "a_b", "~7e"]:
            assert len(store.search(probe, 10, SearchFilters(tags=[tag]))) == len(paths)
        assert store.search(probe, 10, SearchFilters(tags=["100x"])) == []
        assert store.search(probe, 10, SearchFilters(tags=["axb"])) == []
        assert [h[0] for h in store.search(probe, 10, SearchFilters(paths=["a_b"]))] == [
            "a_b/d.md#0"
        ]
        assert store.search(probe, 10, SearchFilters(paths=["axb"])) == []
        store.delete_paths(paths[:4])
        assert store.ids() == {"a_b/d.md#0", "日本/e.md#0"}

    # -- filters -----------------------------------------------------------------------------

    def _ids(self, store: FileStore, corpus: dict[str, np.ndarray], **kw: Any) -> set[str]:
        hits = store.search(next(iter(corpus.values())), 100, SearchFilters(**kw))
        return {h[0].split("#")[0] for h in hits}

    def test_status_filter(self, store: FileStore, corpus: dict[str, np.ndarray]) -> None:
        assert self._ids(store, corpus) == {p for p, s, *_ in CORPUS if s == "active"}
        assert self._ids(store, corpus, statuses=["archived", "superseded"]) == {
            "daily/2024-02-10/b.md",
            "digest/wiki/d.md",
        }
        assert self._ids(store, corpus, statuses=[]) == set()

    def test_date_range_excludes_undated(
        self, store: FileStore, corpus: dict[str, np.ndarray]
    ) -> None:
        since = dt.date(2024, 1, 5)
        until = dt.date(2024, 2, 10)
        assert self._ids(store, corpus, statuses=ALL, since=since, until=until) == {
            "daily/2024-01-05/a.md",
            "daily/2024-02-10/b.md",
        }
        assert self._ids(store, corpus, statuses=ALL, until=dt.date(2024, 1, 1)) == {
            "digest/wiki/d.md"
        }
        assert self._ids(store, corpus, statuses=ALL, since=dt.date(2024, 2, 11)) == {
            "digest/wiki/e.md"
        }

    def test_tags_any_all_and_nested(self, store: FileStore, corpus: dict[str, np.ndarray]) -> None:
        assert self._ids(store, corpus, statuses=ALL, tags=["project"]) == {
            "daily/2024-01-05/a.md",
            "daily/2024-02-10/b.md",
            "digest/wiki/d.md",
        }
        assert self._ids(store, corpus, statuses=ALL, tags=["#Project/ReMe"]) == {
            "daily/2024-01-05/a.md",
            "digest/wiki/d.md",
        }
        assert self._ids(store, corpus, statuses=ALL, tags=["proj"]) == set()
        assert self._ids(store, corpus, statuses=ALL, tags=["meeting", "projects"]) == {
            "daily/2024-01-05/a.md",
            "daily2/c.md",
            "resource/f.md",
        }
        assert self._ids(
            store, corpus, statuses=ALL, tags=["meeting", "project"], tag_mode="all"
        ) == {"daily/2024-01-05/a.md"}
        assert (
            self._ids(store, corpus, statuses=ALL, tags=["meeting", "x"], tag_mode="all") == set()
        )

    def test_path_prefix_and_glob(self, store: FileStore, corpus: dict[str, np.ndarray]) -> None:
        assert self._ids(store, corpus, statuses=ALL, paths=["daily"]) == {
            "daily/2024-01-05/a.md",
            "daily/2024-02-10/b.md",
        }
        assert self._ids(store, corpus, statuses=ALL, paths=["digest/wiki/d.md", "resource/"]) == {
            "digest/wiki/d.md",
            "resource/f.md",
        }
        assert self._ids(store, corpus, statuses=ALL, paths=["daily*/*.md"]) == {"daily2/c.md"}
        assert self._ids(store, corpus, statuses=ALL, paths=["**/e.md"]) == {"digest/wiki/e.md"}
        assert self._ids(store, corpus, statuses=ALL, paths=["daily/**"]) == {
            "daily/2024-01-05/a.md",
            "daily/2024-02-10/b.md",
        }
        assert len(self._ids(store, corpus, statuses=ALL, paths=[""])) == len(CORPUS)

    def test_random_filters_agree_with_their_definition(self, store: FileStore) -> None:
        rng = np.random.default_rng(11)
        folders = ["daily/2024-01-01", "daily/2024-01-02", "digest/wiki", "a_b", "it's"]
        tagset = ["p", "p/q", "p/q/r", "m", "n"]
        n = 300
        vecs = unit(rng, n)
        meta = []
        for i in range(n):
            path = f"{folders[i % len(folders)]}/n{i % 37}.md"
            status = ALL[int(rng.integers(3))]
            date = None if rng.random() < 0.2 else f"2024-01-{int(rng.integers(1, 29)):02d}"
            tags = tuple(t for t in tagset if rng.random() < 0.3)
            if "p/q/r" in tags:
                tags = tuple(dict.fromkeys((*tags, "p/q", "p")))
            meta.append((f"{path}#{i}", path, status, date, tags))
        store.upsert(
            [
                rec(c, p, v, status=s, date=d, tags=t)
                for (c, p, s, d, t), v in zip(meta, vecs, strict=False)
            ]
        )
        queries = unit(rng, 12)
        for k, q in enumerate(queries):
            filters = SearchFilters(
                statuses=list(rng.choice(ALL, size=int(rng.integers(1, 4)), replace=False)),
                since=dt.date(2024, 1, 5) if k % 3 == 0 else None,
                until=dt.date(2024, 1, 20) if k % 4 == 0 else None,
                tags=list(rng.choice(tagset, size=int(rng.integers(0, 3)), replace=False)),
                tag_mode="all" if k % 2 else "any",
                paths=[["daily"], ["digest/wiki", "a_b"], ["**/n1*.md"], [], ["it's"]][k % 5],
            )
            passing = [i for i, (_, p, s, d, t) in enumerate(meta) if matches(filters, p, s, d, t)]
            order = sorted(passing, key=lambda i: -float(vecs[i] @ q))[:10]
            got = store.search(q, 10, filters)
            assert [h[0] for h in got] == [meta[i][0] for i in order], filters

    # -- persistence -------------------------------------------------------------------------

    def test_reopen_after_close_returns_the_same(self, make_store: StoreFactory) -> None:
        vecs = unit(np.random.default_rng(5), 30)
        first = make_store()
        first.open(MODEL, DIM)
        first.upsert([rec(f"n{i}.md#0", f"n{i}.md", v, tags=("t",)) for i, v in enumerate(vecs)])
        first.delete_paths(["n0.md"])
        first.flush()
        before = [first.search(v, 5, SearchFilters(tags=["t"])) for v in vecs]
        first.close()
        second = make_store()
        second.open(MODEL, DIM)
        try:
            assert second.ids() == {f"n{i}.md#0" for i in range(1, 30)}
            after = [second.search(v, 5, SearchFilters(tags=["t"])) for v in vecs]
            for b, a in zip(before, after, strict=True):
                assert [h[0] for h in a] == [h[0] for h in b]
                assert [h[1] for h in a] == pytest.approx([h[1] for h in b], abs=1e-5)
        finally:
            second.close()

    def test_another_model_drops_old_vectors(self, make_store: StoreFactory) -> None:
        v = unit(np.random.default_rng(6), 1)[0]
        first = make_store()
        first.open(MODEL, DIM)
        first.upsert([rec("a.md#0", "a.md", v)])
        first.close()
        same = make_store()
        same.open(MODEL, DIM)
        assert same.ids() == {"a.md#0"}
        same.close()
        other = make_store()
        other.open("other/model", DIM)
        assert other.ids() == set()
        other.upsert([rec("b.md#0", "b.md", v)])
        other.close()
        wider = make_store()
        wider.open("other/model", DIM * 2)
        try:
            assert wider.ids() == set()
            w = np.concatenate([v, v]) / np.sqrt(2)
            wider.upsert([rec("c.md#0", "c.md", w)])
            assert wider.search(w, 2)[0][0] == "c.md#0"
        finally:
            wider.close()

    def test_unopened_store_refuses(self, make_store: StoreFactory) -> None:
        s = make_store()
        with pytest.raises(RemeError, match="open"):
            s.upsert([rec("a#0", "a.md", np.ones(DIM, dtype=np.float32))])
        s.close()

    def test_crash_between_writes_leaves_a_usable_consistent_store(
        self, make_store: StoreFactory, state_dir: Path
    ) -> None:
        if not self.store_class:
            pytest.skip("store_class not set: the child process cannot build the store")
        script = textwrap.dedent(
            f"""
            import importlib, json, sys
            sys.path.insert(0, {str(REPO_ROOT)!r})
            from pathlib import Path
            from reme_core.components import ComponentContext, VectorRecord
            from reme_core.testing.vector_store import vector_for
            mod, cls = {self.store_class!r}.split(":")
            Store = getattr(importlib.import_module(mod), cls)
            state = Path({str(state_dir)!r})
            store = Store(Store.Settings(**json.loads({json.dumps(self.store_settings)!r})),
                          ComponentContext(workspace=state.parent, state_dir=state))
            store.open({MODEL!r}, {DIM})
            batch = 0
            while True:
                ids = [f"b{{batch}}/n{{i}}.md#0" for i in range(25)]
                store.upsert([VectorRecord(c, c.split("#")[0], vector_for(c)) for c in ids])
                if batch % 3 == 0:
                    store.delete_paths([f"b{{batch}}/n0.md"])
                print(batch, flush=True)
                batch += 1
            """
        )
        proc = subprocess.Popen(
            [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        try:
            assert proc.stdout is not None
            for _ in range(6):  # let it finish a few batches, then kill it mid-stream
                line = proc.stdout.readline()
                if not line:
                    pytest.fail(f"child died: {proc.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
            os.kill(proc.pid, signal.SIGKILL)
        finally:
            proc.kill()
            proc.wait()
        store = make_store()
        store.open(MODEL, DIM)
        try:
            ids = store.ids()
            # An ANN-only store may, rarely, not rank an exact match first among near-ties
            # right after a crash; it must still find it among the top 10 with cosine 1.
            top = 10 if self.approximate_always else 1
            for cid in ids:
                assert cid.startswith("b") and cid.endswith(".md#0")
                hits = dict(store.search(vector_for(cid), top, SearchFilters(statuses=ALL)))
                assert cid in hits
                assert hits[cid] == pytest.approx(1.0, abs=1e-4)
            fresh = vector_for("after.md#0")
            store.upsert([rec("after.md#0", "after.md", fresh)])
            assert store.search(fresh, 1)[0][0] == "after.md#0"
            assert store.ids() == ids | {"after.md#0"}
        finally:
            store.close()

    # -- agreement with the exact reference ----------------------------------------------------

    def test_agrees_with_the_exact_reference(
        self, make_store: StoreFactory, tmp_path: Path
    ) -> None:
        dim, n = 64, 2000
        rng = np.random.default_rng(42)
        vecs = unit(rng, n, dim)
        queries = unit(rng, 20, dim)
        records = [rec(f"p{i % 97}.md#{i}", f"p{i % 97}.md", v) for i, v in enumerate(vecs)]
        ref = ReferenceStore()
        ref.open("agree", dim)
        ref.upsert(records)
        store = make_store()
        store.open("agree", dim)
        try:
            for start in range(0, n, 500):
                store.upsert(records[start : start + 500])
            expected = [[h[0] for h in ref.search(q, 10)] for q in queries]
            got = [[h[0] for h in store.search(q, 10)] for q in queries]
            if self.approximate_always:
                assert _recall(got, expected) >= 0.98
            else:
                assert got == expected
            store.optimize()
            got = [[h[0] for h in store.search(q, 10)] for q in queries]
            if self.approximate_after_optimize or self.approximate_always:
                assert _recall(got, expected) >= 0.9
            else:
                assert got == expected
        finally:
            store.close()
            ref.close()

    def test_concurrent_threads(self, store: FileStore) -> None:
        errors: list[BaseException] = []

        def work(worker: int) -> None:
            try:
                rng = np.random.default_rng(worker)
                for i in range(20):
                    v = unit(rng, 1)[0]
                    cid = f"w{worker}/n{i}.md#0"
                    store.upsert([rec(cid, cid.split("#")[0], v)])
                    assert store.search(v, 1)[0][0] == cid
            except BaseException as exc:  # surfaced below; a thread's exception is otherwise lost
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert len(store.ids()) == 80


def _recall(got: list[list[str]], expected: list[list[str]]) -> float:
    """Mean share of the exact top-10 that the store returned."""
    return float(
        np.mean([len(set(g) & set(e)) / len(e) for g, e in zip(got, expected, strict=True)])
    )
