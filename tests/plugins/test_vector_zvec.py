"""The zvec vector store: the FileStore conformance suite plus locking, read-only mode, errors."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from reme_core.components import ComponentContext, VectorRecord
from reme_core.errors import PluginError, RemeError, StoreBusyError
from reme_core.plugins import Plugins
from reme_core.schema import SearchFilters
from reme_core.testing.vector_store import DIM, MODEL, REPO_ROOT, VectorStoreConformance, unit
from reme_plugins import vector_zvec
from reme_plugins.vector_filters import encode_tag, zvec_plan
from reme_plugins.vector_zvec import ZvecFileStore, _decode_tag


def _context(state_dir: Path) -> ComponentContext:
    return ComponentContext(workspace=state_dir.parent, state_dir=state_dir)


def _store(state_dir: Path, **settings) -> ZvecFileStore:
    return ZvecFileStore(ZvecFileStore.Settings(**settings), _context(state_dir))


class TestZvecFileStore(VectorStoreConformance):
    store_class = "reme_plugins.vector_zvec:ZvecFileStore"
    approximate_after_optimize = True

    @pytest.fixture
    def make_store(self, state_dir):
        return lambda: _store(state_dir)


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    return tmp_path / ".reme"


@pytest.fixture
def store(state_dir: Path):
    s = _store(state_dir)
    s.open(MODEL, DIM)
    yield s
    s.close()


HOLDER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[1])
    from pathlib import Path
    from reme_core.components import ComponentContext
    from reme_plugins.vector_zvec import ZvecFileStore
    state = Path(sys.argv[2])
    s = ZvecFileStore(ZvecFileStore.Settings(read_only=sys.argv[3] == "ro"),
                      ComponentContext(workspace=state.parent, state_dir=state))
    s.open(sys.argv[4], int(sys.argv[5]))
    print("held", flush=True)
    sys.stdin.read()  # hold the collection until the parent closes our stdin
    s.close()
    """
)


class _Holder:
    """A second process holding the collection open (as writer or reader) until closed."""

    def __init__(self, state_dir: Path, mode: str):
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(REPO_ROOT), str(state_dir), mode, MODEL, str(DIM)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        line = self.proc.stdout.readline()  # type: ignore[union-attr]
        if line.strip() != "held":
            self.close()
            raise AssertionError(f"holder failed: {self.proc.stderr.read()[-2000:]}")  # type: ignore[union-attr]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()  # type: ignore[union-attr]
            self.proc.wait(timeout=60)


def _create(state_dir: Path) -> None:
    s = _store(state_dir)
    s.open(MODEL, DIM)
    s.upsert([VectorRecord("a.md#0", "a.md", unit(np.random.default_rng(0), 1)[0])])
    s.close()


def test_registers_as_zvec_file_store() -> None:
    plugins = Plugins()
    plugins.register(vector_zvec, name="vector_zvec")
    assert plugins.get("file_store", "zvec") is ZvecFileStore


def test_collection_and_meta_live_under_state_dir(store: ZvecFileStore, state_dir: Path) -> None:
    store.upsert([VectorRecord("a.md#0", "a.md", unit(np.random.default_rng(0), 1)[0])])
    store.flush()
    assert (state_dir / "zvec" / "chunks").is_dir()
    meta = json.loads((state_dir / "zvec" / "chunks.meta.json").read_text())
    assert meta == {"version": 1, "model_id": MODEL, "dim": DIM}
    stats = store.stats()
    assert stats["vectors"] == 1 and stats["model_id"] == MODEL and stats["dim"] == DIM


@pytest.mark.slow
def test_a_second_writer_process_gets_store_busy(state_dir: Path) -> None:
    _create(state_dir)
    holder = _Holder(state_dir, "rw")
    try:
        with pytest.raises(StoreBusyError, match="in use by another process"):
            _store(state_dir).open(MODEL, DIM)
        with pytest.raises(StoreBusyError):
            _store(state_dir, read_only=True).open(MODEL, DIM)
    finally:
        holder.close()
    s = _store(state_dir)  # released when the holder exits
    s.open(MODEL, DIM)
    assert s.ids() == {"a.md#0"}
    s.close()


@pytest.mark.slow
def test_readers_share_and_block_a_writer(state_dir: Path) -> None:
    _create(state_dir)
    holder = _Holder(state_dir, "ro")
    try:
        reader = _store(state_dir, read_only=True)
        reader.open(MODEL, DIM)
        v = unit(np.random.default_rng(0), 1)[0]
        assert reader.search(v, 1)[0][0] == "a.md#0"
        with pytest.raises(RemeError, match="read-only"):
            reader.upsert([VectorRecord("b.md#0", "b.md", v)])
        with pytest.raises(RemeError, match="read-only"):
            reader.delete_paths(["a.md"])
        reader.close()
        with pytest.raises(StoreBusyError):
            _store(state_dir).open(MODEL, DIM)
    finally:
        holder.close()


def test_same_process_second_writer_is_busy(store: ZvecFileStore, state_dir: Path) -> None:
    with pytest.raises(StoreBusyError):
        _store(state_dir).open(MODEL, DIM)


def test_reader_of_a_missing_collection_is_empty(state_dir: Path) -> None:
    reader = _store(state_dir, read_only=True)
    reader.open(MODEL, DIM)
    assert reader.ids() == set()
    assert reader.search(np.ones(DIM, dtype=np.float32), 3) == []
    reader.close()


def test_reader_refuses_another_model(state_dir: Path) -> None:
    _create(state_dir)
    with pytest.raises(RemeError, match="another model"):
        _store(state_dir, read_only=True).open("other", DIM)


def test_damaged_collection_is_a_clear_error(state_dir: Path) -> None:
    _create(state_dir)
    for f in (state_dir / "zvec" / "chunks").rglob("*"):
        if f.is_file() and f.name != "LOCK":
            f.write_bytes(b"garbage" * 10)
    with pytest.raises(RemeError, match=r"zvec failed to open .*chunks"):
        _store(state_dir).open(MODEL, DIM)


def test_optimize_builds_the_index(store: ZvecFileStore) -> None:
    vecs = unit(np.random.default_rng(1), 300)
    store.upsert([VectorRecord(f"n{i}#0", f"n{i}.md", v) for i, v in enumerate(vecs)])
    assert store.stats()["indexed"] < 1.0
    store.optimize()
    assert store.stats()["indexed"] == pytest.approx(1.0)
    assert store.search(vecs[5], 1)[0][0] == "n5#0"


def test_filters_are_pushed_down_exactly_when_they_can_be() -> None:
    plan = zvec_plan(SearchFilters(statuses=["active", "archived"], tags=["#Project/X"]))
    assert plan.exact
    assert plan.expression == (
        "status IN ('active', 'archived') AND tags CONTAIN_ANY ('project/x')"
    )
    import datetime as dt

    plan = zvec_plan(
        SearchFilters(
            since=dt.date(2024, 1, 1),
            until=dt.date(2024, 1, 31),
            tags=["a", "b"],
            tag_mode="all",
            paths=["daily"],
        )
    )
    assert plan.exact
    assert plan.expression == (
        "status IN ('active') AND date >= '2024-01-01' AND date <= '2024-01-31'"
        " AND tags CONTAIN_ALL ('a', 'b') AND (path = 'daily' OR path LIKE 'daily/%')"
    )


@pytest.mark.parametrize(
    ("paths", "expression"),
    [
        (["daily/**"], "(path LIKE 'daily/%')"),
        (["it's/x"], "(path LIKE 'it%')"),
        (["my_notes"], "(path LIKE 'my%')"),
        (["**/x.md"], None),
        (["'); DROP"], None),
    ],
)
def test_unsafe_or_glob_paths_are_widened_then_post_filtered(paths, expression) -> None:
    plan = zvec_plan(SearchFilters(statuses=["active"], paths=paths))
    assert not plan.exact
    rest = plan.expression.removeprefix("status IN ('active')").removeprefix(" AND ") or None
    assert rest == expression


def test_empty_plans() -> None:
    assert zvec_plan(SearchFilters(statuses=[])).empty
    assert zvec_plan(SearchFilters(tags=[" "])).empty
    assert zvec_plan(None).expression is None


@pytest.mark.parametrize("tag", ["plain", "it's", "100%", "a_b", "~7e", "back\\slash", "日本"])
def test_tag_encoding_round_trips_and_is_safe(tag: str) -> None:
    encoded = encode_tag(tag)
    assert _decode_tag(encoded) == tag
    assert not any(c in encoded for c in "%_\\'\"")


def test_settings() -> None:
    assert ZvecFileStore.Settings().read_only is False
    with pytest.raises(ValidationError):
        ZvecFileStore.Settings(path="x")  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="plain file name"):
        ZvecFileStore.Settings(collection="../c")


def test_needs_a_context() -> None:
    with pytest.raises(PluginError, match="state_dir"):
        ZvecFileStore()
