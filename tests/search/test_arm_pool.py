"""The other arms run in one shared, long-lived pool beside the calling thread."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from conftest import DEFAULT_PLUGIN_MODULES, KEYWORD_ONLY_ENV, copy_example

from reme_core.plugins import Plugins
from reme_core.runtime import Reme
from reme_core.schema import SearchFilters
from reme_core.search import arm_pool
from reme_core.search.arms import KeywordArm
from reme_core.search.engine import Searcher


class RecordingArm:
    """A vector arm stand-in that notes which thread ran it."""

    name = "vector"

    def __init__(self) -> None:
        self.threads: set[str] = set()

    def rank(
        self, query: str, limit: int, allowed_ids: set[str], filters: SearchFilters
    ) -> list[tuple[str, float]]:
        self.threads.add(threading.current_thread().name)
        return [(chunk_id, 0.5) for chunk_id in sorted(allowed_ids)[:limit]]


@pytest.fixture(scope="module")
def reme(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Reme]:
    plugins = Plugins()
    for module in DEFAULT_PLUGIN_MODULES:
        plugins.register(module)
    root = copy_example(tmp_path_factory.mktemp("pool") / "ws")
    with Reme.open(root, plugins=plugins, env=KEYWORD_ONLY_ENV) as opened:
        opened.index()
        yield opened


def test_searches_reuse_the_pool_threads(reme: Reme) -> None:
    arm = RecordingArm()
    searcher = Searcher(
        reme.catalog,
        [KeywordArm(reme.keyword), arm],
        {"keyword": 0.75, "vector": 0.25},
        reme.settings.search,
    )
    before = threading.active_count()
    for _ in range(50):
        response = searcher.search("deploy", expand=False)
        assert response.arms == ["keyword", "vector"] and response.hits
    assert arm.threads and all(name.startswith("reme-arm") for name in arm.threads)
    # A thread per search would leave up to 50 behind; the pool holds at most cores + 4.
    assert threading.active_count() - before <= arm_pool.arm_pool()._max_workers
    assert len(arm.threads) <= arm_pool.arm_pool()._max_workers


def test_keyword_only_search_runs_in_the_caller(reme: Reme) -> None:
    seen: list[str] = []

    class Caller(KeywordArm):
        def rank(self, *args):  # type: ignore[no-untyped-def]
            seen.append(threading.current_thread().name)
            return super().rank(*args)

    searcher = Searcher(
        reme.catalog, [Caller(reme.keyword)], {"keyword": 1.0}, reme.settings.search
    )
    assert searcher.search("deploy", expand=False).hits
    assert seen == [threading.current_thread().name]


def test_a_forked_child_makes_its_own_pool() -> None:
    first = arm_pool.arm_pool()
    arm_pool._forget_after_fork()  # what os.register_at_fork runs in a child
    second = arm_pool.arm_pool()
    assert second is not first and second.submit(lambda: 7).result(timeout=10) == 7
    first.shutdown(wait=True)
