"""A file whose name is not valid UTF-8, made outside reme, is a problem, never a 500 (issue 20,
defect 4). Python sees such a name as a str with surrogate escapes; no index can store it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from watchdog.events import FileCreatedEvent, FileDeletedEvent

from reme_core.index.indexer import UNNAMABLE
from reme_core.index.watcher import Watcher
from tests.server.api_support import BASE_URL, Served, served

RAW = b"digest/wiki/latin1-\xe9t\xe9.md"
SHOWN = "digest/wiki/latin1-\\xe9t\\xe9.md"
DECODED = os.fsdecode(RAW)


def _make(root: Path) -> None:
    with open(os.fsencode(root) + b"/" + RAW, "wb") as handle:
        handle.write(b"# Latin-1 name\nzebracorn\n")


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served(tmp_path_factory.mktemp("bad-names")) as found:
        _make(found.project)
        found.registry.get("default").index()  # what ``reme index`` does before serving
        yield found


def test_index_reports_the_name_as_a_problem_and_indexes_the_rest(api: Served) -> None:
    report = api.registry.get("default").index()
    assert report.problems == {SHOWN: UNNAMABLE}
    status = api.post("status").json()
    assert status["problems"] == {SHOWN: UNNAMABLE}
    assert status["files"] >= 10  # every other note is indexed


def test_reindex_and_a_watcher_batch_report_it_too(api: Served) -> None:
    response = api.post("reindex")
    assert response.status_code == 200, response.text
    assert response.json()["problems"] == {SHOWN: UNNAMABLE}
    reme = api.registry.get("default")
    report = reme.indexer.update([DECODED])  # what the watcher hands over for the file
    assert report.problems == {SHOWN: UNNAMABLE}
    assert api.post("status").json()["problems"] == {SHOWN: UNNAMABLE}


def test_http_status_list_and_the_studio_folder_view_answer(api: Served) -> None:
    assert api.client.get("/status", headers=api.headers("admin")).status_code == 200
    listed = api.post("list", {"path": "digest/wiki"})
    assert listed.status_code == 200, listed.text
    paths = [entry["path"] for entry in listed.json()["entries"]]
    assert DECODED not in paths and "digest/wiki/postgres-tuning.md" in paths
    client = TestClient(api.client.app, base_url=BASE_URL, raise_server_exceptions=False)
    assert client.get(f"/?token={api.tokens['admin']}", follow_redirects=False).status_code == 303
    tree = client.get("/studio/tree?path=digest/wiki")
    assert tree.status_code == 200, tree.text
    assert "postgres-tuning.md" in tree.text
    assert client.get("/studio/status").status_code == 200


def test_a_renamed_file_is_indexed_and_its_problem_forgotten(tmp_path: Path) -> None:
    with served(tmp_path) as api:
        _make(api.project)
        reme = api.registry.get("default")
        assert reme.index().problems == {SHOWN: UNNAMABLE}
        os.rename(os.fsencode(api.project) + b"/" + RAW, api.project / "digest/wiki/latin1.md")
        report = reme.index()
        assert report.problems == {} and "digest/wiki/latin1.md" in report.indexed
        assert api.post("status").json()["problems"] == {}
        assert api.post("search", {"query": "zebracorn"}).json()["hits"]


def test_the_watcher_reports_it_and_forgets_it_once_deleted(tmp_path: Path) -> None:
    with served(tmp_path) as api:
        reme = api.registry.get("default")
        reme.index()
        watcher = Watcher(api.project, reme.indexer.update, debounce=3600)  # flushed by hand
        _make(api.project)
        full = os.fsencode(api.project) + b"/" + RAW
        watcher.on_any_event(FileCreatedEvent(os.fsdecode(full)))
        watcher.flush()
        assert watcher.errors == []
        assert reme.status()["problems"] == {SHOWN: UNNAMABLE}
        os.unlink(full)
        watcher.on_any_event(FileDeletedEvent(os.fsdecode(full)))
        watcher.flush()
        assert watcher.errors == [] and reme.status()["problems"] == {}
