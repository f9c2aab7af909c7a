"""A write pays for the keyword index's incremental rebuild, not the first search after it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import DEFAULT_PLUGIN_MODULES, KEYWORD_ONLY_ENV, copy_example

from reme_core.plugins import Plugins
from reme_core.runtime import Reme
from reme_plugins.keyword_bm25s import Bm25sKeywordIndex


@pytest.fixture
def reme(tmp_path: Path) -> Iterator[Reme]:
    root = tmp_path / "ws"
    copy_example(root)
    plugins = Plugins()
    for module in DEFAULT_PLUGIN_MODULES:
        plugins.register(module)
    plugins.collect()
    with Reme.open(root, plugins=plugins, env=KEYWORD_ONLY_ENV) as opened:
        opened.index()
        yield opened


def test_the_delta_is_rebuilt_by_the_write_and_not_by_the_next_search(reme: Reme) -> None:
    keyword = reme.indexer.keyword
    assert isinstance(keyword, Bm25sKeywordIndex)
    note = reme.root / "digest" / "wiki" / "okapi.md"
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text("# Okapi\n\nThe okapi lives in the Ituri forest.\n", encoding="utf-8")
    builds = keyword.delta_builds
    reme.indexer.update(["digest/wiki/okapi.md"])
    assert keyword.delta_builds == builds + 1  # on the write side
    hits = reme.search("okapi Ituri", limit=5, expand=False).hits
    assert hits and hits[0].path == "digest/wiki/okapi.md"
    assert keyword.delta_builds == builds + 1  # the search found the delta built
