"""The ``Reme`` Python API: opening, read-your-writes through the file tools, status."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import KEYWORD_ONLY_ENV, copy_example

from reme_core.errors import ConfigError, NotFoundError, UnknownComponentError, WorkspaceError
from reme_core.plugins import Plugins
from reme_core.runtime import Reme
from reme_core.schema import SearchFilters
from reme_core.settings import Settings

ALL_STATUSES = SearchFilters(statuses=["active", "archived", "superseded"])


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    copy_example(root)
    return root


@pytest.fixture
def reme(workspace: Path, default_plugins: Plugins) -> Iterator[Reme]:
    with Reme.open(workspace, plugins=default_plugins, env=KEYWORD_ONLY_ENV) as opened:
        opened.index()
        yield opened


def hit_paths(reme: Reme, query: str) -> list[str]:
    response = reme.search(query, limit=50, filters=ALL_STATUSES, expand=False)
    return list(dict.fromkeys(hit.path for hit in response.hits))


# -- opening -------------------------------------------------------------------------------


def test_open_a_missing_workspace_says_how_to_create_it(
    tmp_path: Path, default_plugins: Plugins
) -> None:
    with pytest.raises(WorkspaceError, match="reme init"):
        Reme.open(tmp_path / "nope", plugins=default_plugins, env=KEYWORD_ONLY_ENV)
    assert not (tmp_path / "nope").exists()


def test_open_with_settings_object_and_state_dir(workspace: Path, default_plugins: Plugins) -> None:
    settings = Settings(workspace=workspace)
    with Reme(settings, default_plugins) as reme:
        assert reme.root == workspace.resolve()
        assert reme.state_dir == workspace.resolve() / ".reme"
        assert (workspace / ".reme" / "catalog.sqlite3").is_file()
        assert reme.keyword.name == "bm25s"
        assert set(reme.chunkers) == {".md", ".txt", ".jsonl"}


def test_open_applies_overrides_and_env(workspace: Path, default_plugins: Plugins) -> None:
    with Reme.open(
        workspace,
        plugins=default_plugins,
        env={"REME_SEARCH__LIMIT": "3"},
        overrides=["index.watch_debounce_seconds=0.05"],
    ) as reme:
        assert reme.settings.search.limit == 3
        assert reme.settings.index.watch_debounce_seconds == 0.05
        reme.index()
        assert len(reme.search("postgres").hits) == 3


def test_open_rejects_bad_config_and_unknown_components(
    workspace: Path, default_plugins: Plugins
) -> None:
    with pytest.raises(ConfigError, match=r"search\.limt"):
        Reme.open(
            workspace, plugins=default_plugins, env=KEYWORD_ONLY_ENV, overrides=["search.limt=5"]
        )
    with pytest.raises(UnknownComponentError, match="bm25s"):
        Reme.open(
            workspace,
            plugins=default_plugins,
            env=KEYWORD_ONLY_ENV,
            overrides=["components.keyword_index.name=nope"],
        )


def test_turning_off_the_keyword_index_is_a_config_error(
    workspace: Path, default_plugins: Plugins
) -> None:
    with pytest.raises(ConfigError, match=r"components\.keyword_index"):
        Reme.open(
            workspace,
            plugins=default_plugins,
            env=KEYWORD_ONLY_ENV,
            overrides=["components.keyword_index=null"],
        )


def test_state_survives_close_and_reopen(workspace: Path, default_plugins: Plugins) -> None:
    with Reme.open(workspace, plugins=default_plugins, env=KEYWORD_ONLY_ENV) as reme:
        reme.index()
        reme.files.write("digest/wiki/persisted.md", "# Persisted\n\nokapi stripes\n")
    with Reme.open(workspace, plugins=default_plugins, env=KEYWORD_ONLY_ENV) as reme:
        assert hit_paths(reme, "okapi") == ["digest/wiki/persisted.md"]
        report = reme.index()
        assert report.indexed == []
        assert report.unchanged == 16


# -- read-your-writes ------------------------------------------------------------------------


def test_write_is_searchable_immediately(reme: Reme) -> None:
    assert hit_paths(reme, "capybara") == []
    result = reme.files.write(
        "digest/wiki/capybara.md", "---\ntags: [animals]\n---\n# Capybara\n\nThe capybara swims.\n"
    )
    assert result.created
    assert hit_paths(reme, "capybara") == ["digest/wiki/capybara.md"]
    assert reme.catalog.note("digest/wiki/capybara.md") is not None
    assert reme.tags.paths(["animals"]) == {"digest/wiki/capybara.md"}


def test_edit_replaces_the_old_words(reme: Reme) -> None:
    reme.files.write("digest/wiki/pet.md", "# Pet\n\nThe axolotl lives in the tank.\n")
    assert hit_paths(reme, "axolotl") == ["digest/wiki/pet.md"]
    reme.files.edit("digest/wiki/pet.md", "axolotl", "salamander")
    assert hit_paths(reme, "axolotl") == []
    assert hit_paths(reme, "salamander") == ["digest/wiki/pet.md"]

    reme.files.write("digest/wiki/pet.md", "# Pet\n\nNow a tortoise.\n")
    assert hit_paths(reme, "salamander") == []
    assert hit_paths(reme, "tortoise") == ["digest/wiki/pet.md"]


def test_frontmatter_update_is_reflected_in_status_filters(reme: Reme) -> None:
    path = "digest/procedure/deploy-process.md"
    active = SearchFilters()
    assert path in {h.path for h in reme.search("smoke import", filters=active).hits}
    reme.files.update_frontmatter(path, {"status": "archived"})
    assert path not in {h.path for h in reme.search("smoke import", filters=active).hits}
    assert path in hit_paths(reme, "smoke import")
    assert reme.catalog.note(path).status == "archived"


def test_move_keeps_it_searchable_and_rewrites_inbound_links(reme: Reme, workspace: Path) -> None:
    src = "digest/wiki/larkspur-architecture.md"
    dst = "digest/wiki/architecture/larkspur.md"
    inbound_before = {link.source for link in reme.graph.inbound(src)}
    assert "digest/procedure/deploy-process.md" in inbound_before
    assert src in hit_paths(reme, "gunicorn uvicorn workers")

    result = reme.files.move(src, dst)

    assert set(result.rewritten) <= inbound_before
    assert "digest/procedure/deploy-process.md" in result.rewritten
    found = hit_paths(reme, "gunicorn uvicorn workers")
    assert dst in found and src not in found
    assert reme.catalog.note(src) is None
    assert reme.catalog.note(dst) is not None
    assert reme.graph.inbound(src) == []
    assert {link.source for link in reme.graph.inbound(dst)} == inbound_before
    for source in result.rewritten:
        text = (workspace / source).read_text("utf-8")
        assert "larkspur-architecture]]" not in text, source
        assert "larkspur-architecture#" not in text, source
    onboarding = (workspace / "daily/2026-11-12/session-onboarding-questions.md").read_text("utf-8")
    assert "#Services and ports]]" in onboarding  # the anchor survives the rewrite
    # Nothing dangles because of the move.
    assert not any(link.raw.endswith("larkspur-architecture") for link in reme.graph.unresolved())
    # The rewritten notes are indexed with their new text (no pending changes on the next scan).
    assert reme.index().indexed == []


def test_delete_removes_it_and_reports_inbound(reme: Reme) -> None:
    path = "daily/2026-11-10/session-perf-tuning.md"
    assert path in hit_paths(reme, "shared_buffers")
    result = reme.files.delete(path)
    assert "digest/wiki/postgres-tuning-2026.md" in result.inbound
    assert path not in hit_paths(reme, "shared_buffers")
    assert hit_paths(reme, "数据库连接池") == []
    assert reme.catalog.note(path) is None
    assert reme.index().removed == []
    with pytest.raises(NotFoundError):
        reme.files.read(path)


def test_refused_write_changes_nothing(reme: Reme, workspace: Path) -> None:
    before = reme.status()
    with pytest.raises(WorkspaceError):
        reme.files.write("../escape.md", "# Escape\n\nbasilisk\n")
    with pytest.raises(WorkspaceError):
        reme.files.write("digest/wiki/nul.md", "# Nul\n\x00basilisk\n")
    assert not (workspace.parent / "escape.md").exists()
    assert not (workspace / "digest/wiki/nul.md").exists()
    assert hit_paths(reme, "basilisk") == []
    assert reme.status()["files"] == before["files"]


# -- status --------------------------------------------------------------------------------


def test_status_reports_counts_and_components(reme: Reme, workspace: Path) -> None:
    status = reme.status()
    assert status["workspace"] == str(workspace.resolve())
    assert status["files"] == 15
    assert status["chunks"] == status["keyword_index"]["chunks"] > 15
    assert status["keyword_index"]["name"] == "bm25s"
    assert status["unresolved_links"] == 1  # [[digest/wiki/load-balancer]] in the example
    assert status["vectors"]["state"] == "off"
    assert status["problems"] == {}
