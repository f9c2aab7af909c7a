"""The shipped default stack (e5-onnx + zvec), offline, on a tiny workspace: real hybrid search."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from reme_core.plugins import Plugins
from reme_core.runtime import Reme
from reme_core.workspace import init_workspace

NOTES = {
    "digest/wiki/cabin.md": "# Cabin\n\nThe wireless password at the lake cabin is comet-otter-89.\n",
    "digest/wiki/garden.md": "# Garden\n\nTomatoes need staking before the first summer storms.\n",
    "digest/wiki/car.md": "# Car\n\nThe hatchback's tyres were rotated at the garage in March.\n",
    "digest/wiki/pool.md": "# 连接池\n\n数据库连接池不是越大越好，每个连接都会占用内存。\n",
}


@pytest.fixture(scope="module")
def reme(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Reme]:
    from conftest import DEFAULT_PLUGIN_MODULES

    plugins = Plugins()
    for module in DEFAULT_PLUGIN_MODULES:
        plugins.register(module)
    root = tmp_path_factory.mktemp("defaults") / "ws"
    init_workspace(root)
    for path, text in NOTES.items():
        (root / path).write_text(text, encoding="utf-8")
    with Reme.open(root, plugins=plugins, env={"HF_HUB_OFFLINE": "1"}) as opened:
        opened.index()
        yield opened


def test_defaults_are_e5_onnx_and_zvec_and_fully_embedded(reme: Reme):
    vectors = reme.status()["vectors"]
    assert vectors["model"].startswith("multilingual-e5-small/onnx-") and vectors["store"] == "zvec"
    assert vectors["state"] == "ready" and vectors["embedded"] == vectors["total"] == len(NOTES)


def test_a_paraphrase_with_no_shared_keyword_is_found_by_meaning(reme: Reme):
    response = reme.search("how do I get on the internet at the lakeside house", limit=2)
    assert response.arms == ["keyword", "vector"] and response.degraded == []
    assert response.hits[0].path == "digest/wiki/cabin.md"
    assert response.hits[0].arm_ranks == {"vector": 1}


def test_cjk_query_finds_the_chinese_note(reme: Reme):
    assert reme.search("数据库连接", limit=1).hits[0].path == "digest/wiki/pool.md"


def test_written_notes_are_embedded_before_the_write_returns(reme: Reme):
    reme.files.write("digest/wiki/bike.md", "# Bike\n\nThe bicycle chain was oiled on Sunday.\n")
    hits = reme.search("when was the cycle last lubricated", limit=1).hits
    assert hits[0].path == "digest/wiki/bike.md" and "vector" in hits[0].arm_ranks
