"""search.vector_floor_rank and search.interleave_pattern reach the search's fusion."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conftest import DEFAULT_PLUGIN_MODULES, KEYWORD_ONLY_ENV, copy_example

import reme_core.search.engine as engine
from reme_core.plugins import Plugins
from reme_core.runtime import Reme
from reme_core.schema import SearchFilters
from reme_core.search.arms import KeywordArm
from reme_core.search.engine import Searcher


class FallingArm:
    """A vector arm stand-in: every allowed chunk, cosines 0.001 apart from 0.9 down."""

    name = "vector"

    def __init__(self) -> None:
        self.asked: list[int] = []

    def rank(
        self, query: str, limit: int, allowed_ids: set[str], filters: SearchFilters
    ) -> list[tuple[str, float]]:
        self.asked.append(limit)
        return [(c, 0.9 - 0.001 * i) for i, c in enumerate(sorted(allowed_ids)[:limit])]


@pytest.fixture(scope="module")
def reme(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Reme]:
    root = tmp_path_factory.mktemp("floor") / "ws"
    copy_example(root)
    plugins = Plugins()
    for module in DEFAULT_PLUGIN_MODULES:
        plugins.register(module)
    plugins.collect()
    with Reme.open(root, plugins=plugins, env=KEYWORD_ONLY_ENV) as opened:
        assert opened.index().problems == {}
        yield opened


def _searcher(reme: Reme, **update: object) -> tuple[Searcher, FallingArm]:
    arm = FallingArm()
    config = reme.settings.search.model_copy(update={"fusion": "convex", **update})
    searcher = Searcher(
        reme.catalog,
        [KeywordArm(reme.keyword), arm],
        {"keyword": 0.7, "vector": 0.3},
        config,
        graph=reme.graph,
        tags=reme.tags,
    )
    return searcher, arm


def test_the_floor_rank_sets_the_vector_arms_zero_in_a_search(reme: Reme) -> None:
    # Nothing matches the keyword arm, so each hit's score is 0.3 x its normalised cosine.
    plain, arm = _searcher(reme)
    floored, _ = _searcher(reme, vector_floor_rank=3)
    default = [h.score for h in plain.search("zzzxqv", limit=4, expand=False).hits]
    fetched = arm.asked[-1]
    assert fetched == 4 * reme.settings.search.candidate_multiplier
    assert default == pytest.approx([0.3 * (1 - i / (fetched - 1)) for i in range(4)], abs=1e-5)
    scores = [h.score for h in floored.search("zzzxqv", limit=4, expand=False).hits]
    assert scores == pytest.approx([0.3, 0.15, 0.0, 0.0], abs=1e-5)


def test_the_interleave_pattern_reaches_fuse(reme: Reme, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[dict] = []
    real = engine.fuse

    def spy(*args: object, **kwargs: object) -> list:
        seen.append(kwargs)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(engine, "fuse", spy)
    searcher, _ = _searcher(
        reme, fusion="interleave", interleave_pattern="aab", vector_floor_rank=9
    )
    assert searcher.search("postgres", limit=5, expand=False).hits
    assert seen[-1]["pattern"] == "aab" and seen[-1]["floor_rank"] == 9
    assert seen[-1]["method"] == "interleave"
