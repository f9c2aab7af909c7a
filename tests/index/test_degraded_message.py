"""A degraded search names the command that works, also while a server runs, and a watcher
failure stops being reported once a batch goes through again (issue 20, defect 10)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FAKE_VECTORS, copy_example
from watchdog.events import FileModifiedEvent

from reme_core.index.drift import CATCH_UP
from reme_core.index.watcher import Watcher
from reme_core.runtime import Reme
from tests.server.api_support import served


def test_partial_vectors_name_reindex_which_works_while_served(tmp_path: Path) -> None:
    with Reme.open(copy_example(tmp_path / "ws"), overrides=FAKE_VECTORS) as reme:
        reme.index(vectors="skip")
        degraded = reme.search("postgres").degraded
    line = next(d for d in degraded if "chunks embedded" in d)
    assert CATCH_UP in line
    assert "`reme reindex` while a server runs: it goes through the server" in line


def test_drift_lines_name_reindex_too(tmp_path: Path) -> None:
    with Reme.open(copy_example(tmp_path / "ws")) as reme:
        reme.index()
        (reme.root / "digest/wiki/postgres-tuning.md").unlink()
        lines = reme.indexer.drift().problems()
    assert lines and all("`reme reindex` while a server runs" in line for line in lines)


def test_the_watchers_failure_clears_on_its_next_good_batch(tmp_path: Path) -> None:
    outcomes = [OSError("disk full"), None]

    def on_batch(paths: list[str]) -> None:
        failure = outcomes.pop(0)
        if failure is not None:
            raise failure

    watcher = Watcher(tmp_path, on_batch, debounce=3600)  # never fires: flushed by hand
    note = str(tmp_path / "a.md")
    watcher.on_any_event(FileModifiedEvent(note))
    watcher.flush()
    assert watcher.errors == ["OSError: disk full"]
    watcher.on_any_event(FileModifiedEvent(note))
    watcher.flush()
    assert watcher.errors == []


def test_served_degraded_list_drops_the_watcher_once_it_recovers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with served(tmp_path, watch=True) as api:
        api.post("status")  # opens the workspace and starts its watcher
        reme = api.registry.get("default")
        watcher = api.registry._state("default").watcher
        assert watcher is not None
        real_update = reme.indexer.update
        calls = []

        def failing_once(*args, **kwargs):
            calls.append(args)
            if len(calls) == 1:
                raise OSError("disk full")
            return real_update(*args, **kwargs)

        monkeypatch.setattr(reme.indexer, "update", failing_once)
        note = str(api.project / "digest/wiki/postgres-tuning.md")
        watcher.on_any_event(FileModifiedEvent(note))
        watcher.flush()
        assert any("last batch failed" in d for d in api.registry.degraded("default"))
        watcher.on_any_event(FileModifiedEvent(note))
        watcher.flush()
        assert not any("watcher" in d for d in api.registry.degraded("default"))
