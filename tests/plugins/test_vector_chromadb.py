"""The chromadb vector store, embedded and against a real ``chroma run`` server on 127.0.0.1.

Every test runs with chromadb's default embedding function (and its model download) booby-trapped
and with connections beyond loopback refused, so a test fails if the store ever asks chroma to
embed text or reaches the network.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from reme_core.components import ComponentContext, VectorRecord
from reme_core.errors import ConfigError, EmbeddingError, PluginError, RemeError, StoreBusyError
from reme_core.plugins import Plugins
from reme_core.schema import SearchFilters
from reme_core.testing.vector_store import VectorStoreConformance
from reme_plugins import vector_chromadb
from reme_plugins.vector_chromadb import ChromaFileStore, ChromaStoreError

chromadb = pytest.importorskip(
    "chromadb", reason="chromadb is not installed (pip install 'reme[chromadb]')"
)
from chromadb.api.types import DefaultEmbeddingFunction  # noqa: E402
from chromadb.utils.embedding_functions.onnx_mini_lm_l6_v2 import ONNXMiniLM_L6_V2  # noqa: E402

MODEL = "test/model-v1"
DIM = 4
StoreFactory = Callable[..., ChromaFileStore]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def vec(*values: float) -> np.ndarray:
    return np.array(values + (0.0,) * (DIM - len(values)), dtype=np.float32)


def rec(chunk_id: str, vector: np.ndarray, **fields) -> VectorRecord:
    return VectorRecord(chunk_id=chunk_id, path=chunk_id.split("#")[0], vector=vector, **fields)


def ids_of(hits: list[tuple[str, float]]) -> list[str]:
    return [chunk_id for chunk_id, _ in hits]


# -- guards: no default embedding function, no network beyond loopback ---------------------------


class _Trap:
    calls: list[str]

    def __init__(self) -> None:
        self.calls = []

    def __call__(self, what: str) -> Callable[..., None]:
        def trapped(*args, **kwargs) -> None:
            self.calls.append(what)
            raise AssertionError(f"chromadb's default embedding function was used: {what}")

        return trapped

    def call(self, what: str) -> Callable[..., None]:
        """The same, with the ``(self, input)`` signature chroma checks an EF's ``__call__`` for."""

        calls = self.calls

        def __call__(self, input) -> None:
            calls.append(what)
            raise AssertionError(f"chromadb's default embedding function was used: {what}")

        return __call__


_LOOPBACK = {"127.0.0.1", "::1", "localhost"}


@pytest.fixture(autouse=True)
def no_default_embedding_or_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Trap]:
    """Fail on any construction/call of chroma's default EF, a model download, or a remote connect."""
    trap = _Trap()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("ANONYMIZED_TELEMETRY", "False")
    monkeypatch.setattr(DefaultEmbeddingFunction, "__init__", trap("DefaultEmbeddingFunction()"))
    monkeypatch.setattr(
        DefaultEmbeddingFunction, "__call__", trap.call("DefaultEmbeddingFunction.call")
    )
    monkeypatch.setattr(ONNXMiniLM_L6_V2, "__init__", trap("ONNXMiniLM_L6_V2()"))
    monkeypatch.setattr(ONNXMiniLM_L6_V2, "__call__", trap.call("ONNXMiniLM_L6_V2.call"))
    monkeypatch.setattr(ONNXMiniLM_L6_V2, "_download", trap("model download"))
    monkeypatch.setattr(
        ONNXMiniLM_L6_V2, "_download_model_if_not_exists", trap("model download check")
    )
    real_connect = socket.socket.connect

    def loopback_only(sock: socket.socket, address) -> None:
        if sock.family in (socket.AF_INET, socket.AF_INET6) and address[0] not in _LOOPBACK:
            raise AssertionError(f"network access beyond loopback: {address!r}")
        return real_connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", loopback_only)
    yield trap
    assert trap.calls == []


# -- a real Chroma server ------------------------------------------------------------------------


def _chroma_script() -> str | None:
    beside = Path(sys.executable).with_name("chroma")
    return str(beside) if beside.exists() else shutil.which("chroma")


@contextlib.contextmanager
def running_chroma(data: Path) -> Iterator[tuple[str, int]]:
    """``chroma run`` on a free loopback port with its data in ``data``; stopped on exit."""
    script = _chroma_script()
    if script is None:
        pytest.skip("the chroma console script (from the chromadb package) is not on PATH")
    port = _free_port()
    log = (data / "server.log").open("wb")
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
    started = time.monotonic()
    proc = subprocess.Popen(
        [script, "run", "--path", str(data / "db"), "--host", "127.0.0.1", "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    try:
        url = f"http://127.0.0.1:{port}/api/v2/heartbeat"
        deadline = started + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(f"chroma run exited with {proc.returncode}: {_tail(data)}")
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"chroma run gave no heartbeat on port {port} in 60 s: {_tail(data)}")
            time.sleep(0.1)
        sys.stderr.write(f"\n[chroma server ready in {time.monotonic() - started:.2f} s]\n")
        yield "127.0.0.1", port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)
        log.close()


@pytest.fixture(scope="module")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    with running_chroma(tmp_path_factory.mktemp("chroma-server")) as address:
        yield address


def _tail(data: Path) -> str:
    return (data / "server.log").read_text(errors="replace")[-2000:]


# -- behaviour shared by both modes --------------------------------------------------------------


class ChromaBehaviour:
    """Each subclass supplies ``make_store(workspace=None, **settings)`` for its mode."""

    @pytest.fixture
    def store(self, make_store: StoreFactory) -> ChromaFileStore:
        s = make_store()
        s.open(MODEL, DIM)
        return s

    def test_search_returns_cosine_similarity_best_first(self, store: ChromaFileStore) -> None:
        store.upsert(
            [
                rec("a.md#0", vec(1, 0, 0)),
                rec("b.md#0", vec(2, 2, 0)),  # not unit length: cosine ignores the norm
                rec("c.md#0", vec(0, 1, 0)),
                rec("d.md#0", vec(-1, 0, 0)),
            ]
        )
        hits = store.search(vec(3, 0, 0), limit=10)
        assert ids_of(hits) == ["a.md#0", "b.md#0", "c.md#0", "d.md#0"]
        assert [score for _, score in hits] == pytest.approx([1.0, 0.70710678, 0.0, -1.0], abs=1e-4)
        assert ids_of(store.search(vec(3, 0, 0), limit=2)) == ["a.md#0", "b.md#0"]

    def test_upsert_replaces_vector_and_fields(self, store: ChromaFileStore) -> None:
        store.upsert([rec("a.md#0", vec(1, 0, 0), tags=("old",))])
        store.upsert([rec("a.md#0", vec(0, 1, 0), status="archived", tags=("new",))])
        assert store.ids() == {"a.md#0"}
        assert store.search(vec(1, 0, 0), 5, SearchFilters()) == []  # default: active only
        hits = store.search(vec(0, 1, 0), 5, SearchFilters(statuses=["archived"], tags=["new"]))
        assert ids_of(hits) == ["a.md#0"]
        assert hits[0][1] == pytest.approx(1.0, abs=1e-4)
        assert (
            store.search(vec(0, 1, 0), 5, SearchFilters(statuses=["archived"], tags=["old"])) == []
        )

    def test_repeated_id_in_one_batch_keeps_the_last(self, store: ChromaFileStore) -> None:
        store.upsert([rec("a.md#0", vec(1, 0, 0)), rec("a.md#0", vec(0, 1, 0))])
        assert store.search(vec(0, 1, 0), 1)[0][1] == pytest.approx(1.0, abs=1e-4)

    def test_delete_paths_removes_every_chunk_of_those_files(self, store: ChromaFileStore) -> None:
        store.upsert(
            [
                rec("a.md#0", vec(1, 0, 0)),
                rec("a.md#1", vec(0, 1, 0)),
                rec("b.md#0", vec(0, 0, 1)),
                rec("c.md#0", vec(1, 1, 0)),
            ]
        )
        store.delete_paths(["a.md", "c.md", "missing.md"])
        store.delete_paths([])
        assert store.ids() == {"b.md#0"}
        assert ids_of(store.search(vec(1, 0, 0), 10)) == ["b.md#0"]

    def test_status_filter(self, store: ChromaFileStore) -> None:
        store.upsert(
            [
                rec("a.md#0", vec(1, 0, 0)),
                rec("b.md#0", vec(1, 0.1, 0), status="archived"),
                rec("c.md#0", vec(1, 0.2, 0), status="superseded"),
            ]
        )
        assert len(store.search(vec(1, 0, 0), 10)) == 3  # no filters at all
        assert ids_of(store.search(vec(1, 0, 0), 10, SearchFilters())) == ["a.md#0"]
        both = SearchFilters(statuses=["archived", "superseded"])
        assert ids_of(store.search(vec(1, 0, 0), 10, both)) == ["b.md#0", "c.md#0"]
        assert store.search(vec(1, 0, 0), 10, SearchFilters(statuses=[])) == []

    def test_date_range_filter_excludes_undated(self, store: ChromaFileStore) -> None:
        store.upsert(
            [
                rec("jan.md#0", vec(1, 0, 0), date="2024-01-31"),
                rec("feb.md#0", vec(1, 0.1, 0), date="2024-02-01"),
                rec("dec.md#0", vec(1, 0.2, 0), date="2023-12-31"),
                rec("none.md#0", vec(1, 0.3, 0)),
            ]
        )
        f = SearchFilters(since=dt.date(2024, 1, 1), until=dt.date(2024, 1, 31))
        assert ids_of(store.search(vec(1, 0, 0), 10, f)) == ["jan.md#0"]
        f = SearchFilters(since=dt.date(2024, 1, 31))
        assert ids_of(store.search(vec(1, 0, 0), 10, f)) == ["jan.md#0", "feb.md#0"]
        f = SearchFilters(until=dt.date(2023, 12, 31))
        assert ids_of(store.search(vec(1, 0, 0), 10, f)) == ["dec.md#0"]
        assert len(store.search(vec(1, 0, 0), 10)) == 4

    def test_tag_filter_any_all_nested_and_case(self, store: ChromaFileStore) -> None:
        store.upsert(
            [
                rec("a.md#0", vec(1, 0, 0), tags=("project", "project/reme", "idea")),
                rec("b.md#0", vec(1, 0.1, 0), tags=("project", "project/other")),
                rec("c.md#0", vec(1, 0.2, 0), tags=("idea",)),
                rec("d.md#0", vec(1, 0.3, 0)),
            ]
        )

        def tagged(tags: list[str], mode: str = "any") -> list[str]:
            return ids_of(store.search(vec(1, 0, 0), 10, SearchFilters(tags=tags, tag_mode=mode)))

        assert tagged(["project"]) == ["a.md#0", "b.md#0"]
        assert tagged(["#Project/ReMe"]) == ["a.md#0"]
        assert tagged(["project/reme", "idea"]) == ["a.md#0", "c.md#0"]
        assert tagged(["project", "idea"], "all") == ["a.md#0"]
        assert tagged(["proj"]) == []
        assert tagged(["idea", "#"], "all") == []

    def test_path_prefix_and_glob_filters(self, store: ChromaFileStore) -> None:
        store.upsert(
            [
                rec("daily/2024-01-01/a.md#0", vec(1, 0, 0)),
                rec("daily/2024-01-02.md#0", vec(1, 0.1, 0)),
                rec("digest/wiki/x.md#0", vec(1, 0.2, 0)),
                rec("dailyish/y.md#0", vec(1, 0.3, 0)),
            ]
        )

        def under(*patterns: str) -> list[str]:
            return ids_of(store.search(vec(1, 0, 0), 10, SearchFilters(paths=list(patterns))))

        assert under("daily") == ["daily/2024-01-01/a.md#0", "daily/2024-01-02.md#0"]
        assert under("daily/", "digest/wiki/x.md") == [
            "daily/2024-01-01/a.md#0",
            "daily/2024-01-02.md#0",
            "digest/wiki/x.md#0",
        ]
        assert under("daily/*.md") == ["daily/2024-01-02.md#0"]
        assert under("**/x.md", "dailyish") == ["digest/wiki/x.md#0", "dailyish/y.md#0"]
        assert under("nowhere") == []
        assert len(under("/")) == 4

    def test_post_filter_over_fetches_until_limit(self, store: ChromaFileStore) -> None:
        near = [rec(f"other/{i}.md#0", vec(1, i / 1000, 0)) for i in range(40)]
        far = [rec(f"keep/{i}.md#0", vec(0, 1, i / 100)) for i in range(3)]
        store.upsert(near + far)
        hits = store.search(vec(1, 0, 0), 2, SearchFilters(paths=["keep/*.md"]))
        assert ids_of(hits) == ["keep/0.md#0", "keep/1.md#0"]
        hits = store.search(vec(1, 0, 0), 10, SearchFilters(paths=["k*/*.md"]))
        assert len(hits) == 3

    def test_filters_combine(self, store: ChromaFileStore) -> None:
        store.upsert(
            [
                rec("daily/a.md#0", vec(1, 0, 0), date="2024-05-01", tags=("t",)),
                rec("daily/b.md#0", vec(1, 0.1, 0), date="2024-05-01"),
                rec("daily/c.md#0", vec(1, 0.2, 0), date="2023-05-01", tags=("t",)),
                rec("other/d.md#0", vec(1, 0.3, 0), date="2024-05-01", tags=("t",)),
                rec(
                    "daily/e.md#0",
                    vec(1, 0.4, 0),
                    date="2024-05-01",
                    tags=("t",),
                    status="archived",
                ),
            ]
        )
        f = SearchFilters(paths=["daily"], tags=["t"], since=dt.date(2024, 1, 1))
        assert ids_of(store.search(vec(1, 0, 0), 10, f)) == ["daily/a.md#0"]

    def test_reopen_keeps_vectors(self, make_store: StoreFactory) -> None:
        first = make_store()
        first.open(MODEL, DIM)
        first.upsert([rec("a.md#0", vec(1, 0, 0), tags=("t",), date="2024-01-01")])
        first.flush()
        first.close()
        second = make_store()
        second.open(MODEL, DIM)
        assert second.ids() == {"a.md#0"}
        assert ids_of(second.search(vec(1, 0, 0), 5, SearchFilters(tags=["t"]))) == ["a.md#0"]

    def test_other_model_or_dim_drops_vectors(self, make_store: StoreFactory) -> None:
        store = make_store()
        store.open(MODEL, DIM)
        store.upsert([rec("a.md#0", vec(1, 0, 0))])
        store.open("test/model-v2", DIM)
        assert store.ids() == set()
        store.upsert([rec("b.md#0", vec(1, 0, 0))])
        store.close()
        again = make_store()
        again.open(MODEL, DIM)  # back to the first model: its vectors were dropped, not kept aside
        assert again.ids() == set()
        again.upsert([rec("c.md#0", vec(1, 0, 0))])
        again.open(MODEL, DIM + 2)
        assert again.ids() == set()
        again.upsert([rec("d.md#0", np.ones(DIM + 2, dtype=np.float32))])
        assert ids_of(again.search(np.ones(DIM + 2), 3)) == ["d.md#0"]

    def test_clear_and_stats(self, store: ChromaFileStore) -> None:
        store.upsert([rec("a.md#0", vec(1, 0, 0)), rec("b.md#0", vec(0, 1, 0))])
        stats = store.stats()
        assert stats["vectors"] == 2
        assert (stats["backend"], stats["model_id"], stats["dim"]) == ("chromadb", MODEL, DIM)
        store.optimize()
        store.clear()
        assert store.ids() == set()
        assert store.search(vec(1, 0, 0), 5) == []
        store.upsert([rec("c.md#0", vec(1, 0, 0))])  # still usable, still cosine
        assert store.search(vec(2, 0, 0), 5)[0][1] == pytest.approx(1.0, abs=1e-4)

    def test_ids_pages_through_many(self, store: ChromaFileStore, monkeypatch) -> None:
        monkeypatch.setattr(vector_chromadb, "_PAGE", 7)
        rng = np.random.default_rng(0)
        records = [rec(f"n{i}.md#0", rng.normal(size=DIM).astype(np.float32)) for i in range(30)]
        store.upsert(records)
        assert store.ids() == {r.chunk_id for r in records}

    def test_bad_vectors_are_refused(self, store: ChromaFileStore) -> None:
        with pytest.raises(EmbeddingError, match="3 dimensions"):
            store.upsert([rec("a.md#0", np.ones(3, dtype=np.float32))])
        with pytest.raises(EmbeddingError, match="NaN"):
            store.upsert([rec("a.md#0", vec(np.nan, 0, 0))])
        with pytest.raises(EmbeddingError, match="all zeros"):
            store.upsert([rec("a.md#0", vec(0, 0, 0))])
        with pytest.raises(EmbeddingError, match="query vector"):
            store.search(np.ones(DIM + 1), 3)
        with pytest.raises(EmbeddingError, match="query vector contains NaN"):
            store.search(vec(np.inf, 0, 0), 3)
        assert store.ids() == set()

    def test_empty_store_and_zero_limit(self, store: ChromaFileStore) -> None:
        assert store.search(vec(1, 0, 0), 5) == []
        store.upsert([rec("a.md#0", vec(1, 0, 0))])
        assert store.search(vec(1, 0, 0), 0) == []

    def test_use_before_open_is_a_clear_error(self, make_store: StoreFactory) -> None:
        store = make_store()
        with pytest.raises(ChromaStoreError, match="open"):
            store.search(vec(1, 0, 0), 3)
        with pytest.raises(ChromaStoreError, match="open"):
            store.upsert([rec("a.md#0", vec(1, 0, 0))])

    def test_ef_search_setting_is_applied_and_updated(self, make_store: StoreFactory) -> None:
        def ef_search(store: ChromaFileStore) -> int:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                return store._collection.configuration["hnsw"]["ef_search"]

        first = make_store(ef_search=123)
        first.open(MODEL, DIM)
        assert ef_search(first) == 123
        first.upsert([rec("a.md#0", vec(1, 0, 0))])
        first.close()
        second = make_store()
        second.open(MODEL, DIM)
        assert ef_search(second) == ChromaFileStore.Settings().ef_search == 400
        assert second.ids() == {"a.md#0"}  # a setting change keeps the vectors

    def test_workspaces_do_not_share_a_collection(
        self, make_store: StoreFactory, tmp_path: Path
    ) -> None:
        a = make_store(workspace=tmp_path / "ws-a")
        b = make_store(workspace=tmp_path / "ws-b")
        a.open(MODEL, DIM)
        b.open(MODEL, DIM)
        a.upsert([rec("a.md#0", vec(1, 0, 0))])
        b.upsert([rec("b.md#0", vec(1, 0, 0))])
        b.open("test/other-model", DIM)  # b's model change leaves a alone
        assert a.ids() == {"a.md#0"}
        assert b.ids() == set()


def _context(workspace: Path) -> ComponentContext:
    workspace.mkdir(parents=True, exist_ok=True)
    return ComponentContext(workspace=workspace, state_dir=workspace / ".reme")


@pytest.fixture
def _closing() -> Iterator[list[ChromaFileStore]]:
    stores: list[ChromaFileStore] = []
    yield stores
    for s in stores:
        s.close()


class TestEmbedded(ChromaBehaviour):
    @pytest.fixture
    def make_store(self, tmp_path: Path, _closing) -> StoreFactory:
        def make(workspace: Path | None = None, **settings) -> ChromaFileStore:
            s = ChromaFileStore(
                ChromaFileStore.Settings(**settings), _context(workspace or tmp_path / "ws")
            )
            _closing.append(s)
            return s

        return make

    def test_files_live_under_state_dir(self, make_store: StoreFactory, tmp_path: Path) -> None:
        store = make_store()
        store.open(MODEL, DIM)
        assert (tmp_path / "ws" / ".reme" / "chroma").is_dir()
        assert store.stats()["location"] == str(tmp_path / "ws" / ".reme" / "chroma")
        assert store._client.get_settings().anonymized_telemetry is False

    def test_second_writer_is_busy_until_the_first_closes(self, make_store: StoreFactory) -> None:
        first = make_store()
        first.open(MODEL, DIM)
        first.upsert([rec("a.md#0", vec(1, 0, 0))])
        second = make_store()
        with pytest.raises(StoreBusyError, match="another"):
            second.open(MODEL, DIM)
        first.close()
        second.open(MODEL, DIM)
        assert second.ids() == {"a.md#0"}


class TestServer(ChromaBehaviour):
    @pytest.fixture
    def make_store(self, chroma_server, tmp_path: Path, _closing) -> StoreFactory:
        host, port = chroma_server

        def make(workspace: Path | None = None, **settings) -> ChromaFileStore:
            settings = {"mode": "server", "host": host, "port": port, **settings}
            s = ChromaFileStore(
                ChromaFileStore.Settings(**settings), _context(workspace or tmp_path / "ws")
            )
            _closing.append(s)
            return s

        return make

    def test_token_is_read_from_env_at_connect_and_sent_as_bearer(
        self, make_store: StoreFactory, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        seen: list[dict] = []
        real = chromadb.HttpClient

        def recording(**kwargs):
            seen.append(kwargs)
            return real(**kwargs)

        monkeypatch.setattr(chromadb, "HttpClient", recording)
        store = make_store(token_env="REME_TEST_CHROMA_TOKEN")
        monkeypatch.setenv("REME_TEST_CHROMA_TOKEN", "s3cret")  # set after construction
        store.open(MODEL, DIM)
        assert seen[0]["headers"]["Authorization"] == "Bearer s3cret"
        assert seen[0]["settings"].anonymized_telemetry is False

    def test_missing_token_variable_names_it(
        self, make_store: StoreFactory, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.delenv("REME_TEST_CHROMA_TOKEN", raising=False)
        with pytest.raises(ConfigError, match="REME_TEST_CHROMA_TOKEN"):
            make_store(token_env="REME_TEST_CHROMA_TOKEN").open(MODEL, DIM)

    def test_server_going_away_is_a_clear_error(self, tmp_path: Path, _closing) -> None:
        (tmp_path / "srv").mkdir()
        with running_chroma(tmp_path / "srv") as (host, port):
            store = ChromaFileStore(
                ChromaFileStore.Settings(mode="server", host=host, port=port),
                _context(tmp_path / "ws"),
            )
            _closing.append(store)
            store.open(MODEL, DIM)
            store.upsert([rec("a.md#0", vec(1, 0, 0))])
        with pytest.raises(ChromaStoreError, match=rf"Chroma server at 127\.0\.0\.1:{port}"):
            store.search(vec(1, 0, 0), 3)


# -- the shared FileStore conformance suite, in both modes -------------------------------------


class TestEmbeddedConformance(VectorStoreConformance):
    store_class = "reme_plugins.vector_chromadb:ChromaFileStore"
    approximate_always = True  # chroma searches its HNSW index from the first insert

    @pytest.fixture
    def make_store(self, state_dir: Path, _closing) -> StoreFactory:
        context = ComponentContext(workspace=state_dir.parent, state_dir=state_dir)

        def make() -> ChromaFileStore:
            s = ChromaFileStore(ChromaFileStore.Settings(), context)
            _closing.append(s)
            return s

        return make


class TestServerConformance(VectorStoreConformance):
    store_class = "reme_plugins.vector_chromadb:ChromaFileStore"
    approximate_always = True

    @pytest.fixture
    def make_store(self, chroma_server, state_dir: Path, _closing) -> StoreFactory:
        host, port = chroma_server
        self.store_settings = {"mode": "server", "host": host, "port": port}  # for the crash test
        context = ComponentContext(workspace=state_dir.parent, state_dir=state_dir)

        def make() -> ChromaFileStore:
            s = ChromaFileStore(ChromaFileStore.Settings(**self.store_settings), context)
            _closing.append(s)
            return s

        return make


# -- mode-independent ----------------------------------------------------------------------------


def test_server_not_running_names_host_and_port(tmp_path: Path) -> None:
    port = _free_port()
    store = ChromaFileStore(
        ChromaFileStore.Settings(mode="server", port=port), _context(tmp_path / "ws")
    )
    with pytest.raises(ChromaStoreError, match=rf"Chroma server at 127\.0\.0\.1:{port}") as err:
        store.open(MODEL, DIM)
    assert isinstance(err.value, RemeError)


def test_registers_as_chromadb_file_store() -> None:
    plugins = Plugins()
    plugins.register(vector_chromadb, name="vector_chromadb")
    assert plugins.get("file_store", "chromadb") is ChromaFileStore


def test_settings_defaults_and_validation() -> None:
    s = ChromaFileStore.Settings()
    assert (s.mode, s.host, s.port, s.ssl, s.token_env, s.collection_prefix) == (
        "embedded",
        "127.0.0.1",
        8000,
        False,
        None,
        "reme",
    )
    for bad in ({"collection_prefix": "-x"}, {"collection_prefix": "a..b"}, {"port": 0}):
        with pytest.raises(ValidationError):
            ChromaFileStore.Settings(**bad)
    with pytest.raises(ValidationError):
        ChromaFileStore.Settings(mode="cloud")
    with pytest.raises(ValidationError):
        ChromaFileStore.Settings(unknown=1)


def test_collection_names_are_stable_valid_and_distinct(tmp_path: Path) -> None:
    def name(workspace: str, model: str, prefix: str = "reme") -> str:
        store = ChromaFileStore(
            ChromaFileStore.Settings(collection_prefix=prefix), _context(tmp_path / workspace)
        )
        return store.collection_name(model)

    first = name("a", MODEL)
    assert first == name("a", MODEL)
    assert re.fullmatch(r"reme-[0-9a-f]{10}-[0-9a-f]{10}", first)
    assert len({first, name("b", MODEL), name("a", "other")}) == 3
    assert name("a", MODEL, prefix="team.x_1").startswith("team.x_1-")


def test_missing_chromadb_tells_how_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "chromadb", None)  # import chromadb -> ImportError
    store = ChromaFileStore(ChromaFileStore.Settings(), _context(tmp_path / "ws"))
    with pytest.raises(PluginError, match=r"pip install 'reme\[chromadb\]'"):
        store.open(MODEL, DIM)
    assert not (tmp_path / "ws" / ".reme" / "chroma").exists()


def test_the_embedding_trap_would_fire(no_default_embedding_or_network: _Trap) -> None:
    """The guard is live: a default embedding function cannot be made, nor a remote connect."""
    with pytest.raises(AssertionError, match="default embedding function"):
        DefaultEmbeddingFunction()
    with pytest.raises(AssertionError, match="beyond loopback"), socket.socket() as s:
        s.connect(("192.0.2.1", 80))
    no_default_embedding_or_network.calls.clear()
