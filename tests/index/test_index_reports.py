"""What indexing reports: notes with broken frontmatter (indexed, and reported), the time spent
embedding, and problem lines that name each path once."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import DEFAULT_PLUGIN_MODULES, KEYWORD_ONLY_ENV

from reme_core import hookimpl
from reme_core.cli import cli
from reme_core.plugins import Plugins
from reme_core.runtime import Reme
from reme_core.schema import SearchFilters
from reme_plugins.embedding_hash import HashEmbedding

BROKEN_YAML = "digest/wiki/broken-yaml.md"
UNCLOSED = "digest/wiki/unclosed.md"
BAD_STATUS = "digest/wiki/bad-status.md"
BINARY = "digest/wiki/binary.md"

ALL_STATUSES = SearchFilters(statuses=["active", "archived", "superseded"])


def hit_paths(reme: Reme, query: str) -> set[str]:
    return {h.path for h in reme.search(query, limit=20, filters=ALL_STATUSES, expand=False).hits}


# -- broken frontmatter --------------------------------------------------------------------------


def test_a_note_with_broken_frontmatter_is_indexed_and_reported(
    workspace: Path, default_plugins: Plugins
) -> None:
    (workspace / BROKEN_YAML).write_text(
        "---\nname: [unclosed\ntags: x\n---\n\n# Heading\n\nThe axolotlbody lives here.\n"
    )
    (workspace / UNCLOSED).write_text("---\nname: Open\n\nThe pangolinbody never closed it.\n")
    (workspace / BAD_STATUS).write_text(
        "---\nname: Kept name\nstatus: deleted\ntags: [keep]\n---\nThe tapirbody stays.\n"
    )
    with Reme.open(workspace, plugins=default_plugins, env=KEYWORD_ONLY_ENV) as reme:
        report = reme.index()
        broken = {BROKEN_YAML, UNCLOSED, BAD_STATUS}
        assert broken <= set(report.indexed)
        assert set(report.problems) == broken
        assert report.problems[BROKEN_YAML].startswith("invalid YAML frontmatter at line ")
        assert "never closed" in report.problems[UNCLOSED]
        assert "status 'deleted'" in report.problems[BAD_STATUS]

        # The body after a closed block, the whole text of an unclosed one.
        assert hit_paths(reme, "axolotlbody") == {BROKEN_YAML}
        assert hit_paths(reme, "pangolinbody") == {UNCLOSED}
        assert hit_paths(reme, "tapirbody") == {BAD_STATUS}
        assert hit_paths(reme, "unclosed") == set()  # the broken block itself is not the text

        # Fields that parsed are kept; the broken ones fall back as for a note without them.
        note = reme.catalog.note(BAD_STATUS)
        assert note is not None
        assert (note.name, note.status, note.tags) == ("Kept name", "active", ["keep"])
        assert reme.catalog.note(BROKEN_YAML).name == "broken-yaml"  # type: ignore[union-attr]

        status = reme.status()
        assert set(status["problems"]) == broken
        assert status["drift"]["found"] is False  # a problem note is indexed, not drift

        # Fixing the frontmatter clears the problem.
        (workspace / BROKEN_YAML).write_text("---\nname: Fixed\n---\nThe axolotlbody lives.\n")
        fixed = reme.index()
        assert fixed.indexed == [BROKEN_YAML] and fixed.problems == {}
        assert BROKEN_YAML not in reme.status()["problems"]
        assert reme.catalog.note(BROKEN_YAML).name == "Fixed"  # type: ignore[union-attr]


def test_a_write_with_broken_frontmatter_is_searchable_at_once(
    workspace: Path, default_plugins: Plugins
) -> None:
    with Reme.open(workspace, plugins=default_plugins, env=KEYWORD_ONLY_ENV) as reme:
        reme.index()
        path = workspace / BROKEN_YAML
        path.write_text("---\ntags: [a\n---\nThe quetzalbody arrived.\n")
        reme.indexer.update([BROKEN_YAML])  # a watcher event
        assert hit_paths(reme, "quetzalbody") == {BROKEN_YAML}
        assert "invalid YAML" in reme.status()["problems"][BROKEN_YAML]


# -- the time embedding took -------------------------------------------------------------------

SLEPT: list[float] = []


class SlowHash(HashEmbedding):
    """The hash embedding, slowed down: each batch sleeps, and the sleep is recorded."""

    name = "slow_hash"

    def embed_passages(self, texts):  # type: ignore[no-untyped-def]
        started = time.perf_counter()
        time.sleep(0.05)
        SLEPT.append(time.perf_counter() - started)
        return super().embed_passages(texts)


class SlowExtras:
    @hookimpl
    def register_embeddings(self, register):  # type: ignore[no-untyped-def]
        register(SlowHash)


@pytest.fixture
def slow_plugins() -> Plugins:
    manager = Plugins()
    for module in DEFAULT_PLUGIN_MODULES:
        manager.register(module)
    manager.register(SlowExtras(), name="slow_extras")
    manager.collect()
    return manager


@pytest.mark.parametrize("operation", ["index", "reindex"])
def test_the_reported_time_covers_embedding(
    workspace: Path, slow_plugins: Plugins, operation: str
) -> None:
    SLEPT.clear()
    overrides = ["components.embedding.name=slow_hash", "components.file_store.name=local"]
    with Reme.open(workspace, plugins=slow_plugins, env={}, overrides=overrides) as reme:
        report = getattr(reme, operation)()
    slept = sum(SLEPT)
    assert SLEPT, "the fake embedding was not called"
    assert report.embed_seconds >= slept
    assert report.seconds >= report.embed_seconds


def test_the_index_line_shows_the_embedding_time(workspace: Path) -> None:
    (workspace / ".reme").mkdir(exist_ok=True)
    result = CliRunner().invoke(
        cli,
        [
            "index",
            "--workspace",
            str(workspace),
            "--set",
            "components.embedding={name: hash}",
            "--set",
            "components.file_store={name: local}",
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    first = result.stdout.splitlines()[0]
    assert first.startswith("indexed 15,") and "s (embedding " in first


# -- problem lines -------------------------------------------------------------------------------


def test_problem_lines_name_each_path_once(workspace: Path) -> None:
    (workspace / ".reme").mkdir(exist_ok=True)
    (workspace / BROKEN_YAML).write_text("---\nname: [unclosed\n---\nbody\n")
    (workspace / BINARY).write_bytes(b"# Binary\n\x00\x01\n")
    runner = CliRunner()
    lines: list[str] = []
    for command in ("index", "status"):
        result = runner.invoke(cli, [command, "--workspace", str(workspace)])
        assert result.exit_code == 0, result.output
        lines += [line for line in result.stdout.splitlines() if "problem:" in line]
    for path in (BROKEN_YAML, BINARY):
        found = [line for line in lines if path in line]
        assert len(found) == 2, lines  # one from index, one from status
        assert all(line.count(path) == 1 for line in found), found
        assert all(line.strip().startswith(f"problem: {path}: ") for line in found), found
