"""`Reme.warm_up` (run by `reme serve` on a thread at start) does the work the first search would
wait for: the default filters' allowed set and the keyword index, so that search reuses them."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import KEYWORD_ONLY_ENV, copy_example

import reme_core.search.allowed as allowed_module
from reme_core.runtime import Reme
from tests.search.test_search import make_plugins


def test_the_first_search_after_a_warm_up_reads_no_catalog_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = copy_example(tmp_path / "ws")
    with Reme.open(root, plugins=make_plugins(), env=KEYWORD_ONLY_ENV) as reme:
        reme.index()
    with Reme.open(root, plugins=make_plugins(), env=KEYWORD_ONLY_ENV) as reme:
        assert reme.warm_up() is False  # keyword-only: no model to load, the rest is warmed
        computed: list[object] = []
        real = allowed_module.allowed_paths
        monkeypatch.setattr(
            allowed_module,
            "allowed_paths",
            lambda *args, **kwargs: computed.append(args) or real(*args, **kwargs),
        )
        hits = reme.search("deploy", limit=3).hits
        assert hits, "the warmed search still answers"
        assert computed == []  # the default filters' allowed set came from the warm-up
        reme.search("deploy", limit=3, filters=None)
        assert computed == []
