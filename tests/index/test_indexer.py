"""The indexer: incremental scans by content hash, problems, exclusions, links and tags."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import EXAMPLE_WORKSPACE, KEYWORD_ONLY_ENV

from reme_core.plugins import Plugins
from reme_core.runtime import Reme
from reme_core.schema import SearchFilters

EXAMPLE_FILES = sorted(
    p.relative_to(EXAMPLE_WORKSPACE).as_posix()
    for p in EXAMPLE_WORKSPACE.rglob("*")
    if p.is_file()
    and p.suffix in {".md", ".txt", ".jsonl"}
    and not p.relative_to(EXAMPLE_WORKSPACE).as_posix().startswith(".")
)

PERF = "daily/2026-11-10/session-perf-tuning.md"
HEROKU = "digest/wiki/old-hosting-heroku.md"


@pytest.fixture
def reme(workspace: Path, default_plugins: Plugins) -> Iterator[Reme]:
    with Reme.open(workspace, plugins=default_plugins, env=KEYWORD_ONLY_ENV) as opened:
        yield opened


def paths_for(reme: Reme, query: str, **filters: object) -> list[str]:
    """Distinct note paths of the hits, best first (all statuses unless filters say otherwise)."""
    search_filters = SearchFilters(**{"statuses": ["active", "archived", "superseded"], **filters})
    response = reme.search(query, limit=50, filters=search_filters, expand=False)
    return list(dict.fromkeys(hit.path for hit in response.hits))


def chunk_paths(reme: Reme) -> set[str]:
    return {cid.rsplit("#", 1)[0] for cid in reme.catalog.chunk_ids()}


# -- incremental scans ---------------------------------------------------------------------------


def test_example_file_list_is_what_the_tests_expect() -> None:
    assert len(EXAMPLE_FILES) == 15
    assert PERF in EXAMPLE_FILES and "sessions/s-2026-11-02-deploy.jsonl" in EXAMPLE_FILES


def test_first_scan_indexes_everything_second_scan_nothing(reme: Reme) -> None:
    first = reme.index()
    assert first.indexed == EXAMPLE_FILES
    assert first.removed == [] and first.problems == {} and first.unchanged == 0

    second = reme.index()
    assert second.indexed == []
    assert second.removed == []
    assert second.unchanged == len(EXAMPLE_FILES)
    status = reme.status()
    assert status["files"] == len(EXAMPLE_FILES)
    assert status["chunks"] > len(EXAMPLE_FILES)
    assert status["problems"] == {}


def test_editing_one_file_reindexes_only_it(reme: Reme, workspace: Path) -> None:
    reme.index()
    assert paths_for(reme, "xylophonist") == []
    path = workspace / PERF
    path.write_text(path.read_text("utf-8") + "\nThe xylophonist tuned the pool too.\n", "utf-8")

    report = reme.index()
    assert report.indexed == [PERF]
    assert report.unchanged == len(EXAMPLE_FILES) - 1
    assert report.removed == []
    assert paths_for(reme, "xylophonist") == [PERF]


def test_update_reports_what_it_did(reme: Reme, workspace: Path) -> None:
    """``update`` is the path API writes and the watcher take: named files only."""
    reme.index()
    (workspace / "digest/wiki/new.md").write_text("# New\n\nnarwhal\n", "utf-8")
    (workspace / PERF).write_text("# Perf\n\nnarwhal tuning\n", "utf-8")
    report = reme.indexer.update(["digest/wiki/new.md", PERF, "digest/wiki/missing.md"])
    assert report.indexed == ["digest/wiki/new.md", PERF]
    assert report.removed == []
    assert report.unchanged == len(EXAMPLE_FILES) - 1

    (workspace / "digest/wiki/new.md").unlink()
    report = reme.indexer.update(["digest/wiki/new.md"])
    assert report.removed == ["digest/wiki/new.md"]
    assert report.unchanged == len(EXAMPLE_FILES)
    assert paths_for(reme, "narwhal") == [PERF]


def test_touching_a_file_without_changing_it_is_not_reindexed(reme: Reme, workspace: Path) -> None:
    reme.index()
    path = workspace / PERF
    path.write_bytes(path.read_bytes())  # new mtime, same content hash
    report = reme.index()
    assert report.indexed == []
    assert report.unchanged == len(EXAMPLE_FILES)


def test_deleting_a_file_removes_its_chunks_tags_and_links(reme: Reme, workspace: Path) -> None:
    reme.index()
    assert PERF in chunk_paths(reme)
    assert reme.tags.tags(PERF) != {}
    assert reme.graph.outbound(PERF) != []
    assert PERF in paths_for(reme, "shared_buffers")

    (workspace / PERF).unlink()
    report = reme.index()

    assert report.removed == [PERF]
    assert report.indexed == []
    assert report.unchanged == len(EXAMPLE_FILES) - 1
    assert reme.catalog.note(PERF) is None
    assert PERF not in chunk_paths(reme)
    assert reme.tags.tags(PERF) == {}
    assert PERF not in reme.tags.paths(["performance"])
    assert reme.graph.outbound(PERF) == []
    assert PERF not in paths_for(reme, "shared_buffers")
    # Links that pointed at the deleted note are dangling now.
    dangling = {(link.source, link.raw) for link in reme.graph.unresolved()}
    assert ("digest/wiki/postgres-tuning-2026.md", "session-perf-tuning") in dangling


# -- files that cannot be indexed ----------------------------------------------------------------


def test_bad_files_are_problems_and_the_rest_still_indexes(
    workspace: Path, default_plugins: Plugins
) -> None:
    bad = {
        "digest/wiki/binary.md": b"# Binary\n\x00\x01\x02 quokkabinary\n",
        "digest/wiki/huge.md": b"# Huge\n\n" + b"quokkahuge " * 500,
        "digest/wiki/latin1.md": "# Caf\xe9 quokkalatin\n".encode("latin-1"),
        "digest/wiki/badyaml.md": b"---\nname: [unclosed\ntags: x\n---\n\nquokkayaml body\n",
        "digest/wiki/badstatus.md": b"---\nstatus: deleted\n---\n\nquokkastatus body\n",
    }
    for rel, data in bad.items():
        (workspace / rel).write_bytes(data)

    with Reme.open(
        workspace,
        plugins=default_plugins,
        env=KEYWORD_ONLY_ENV,
        overrides=["index.max_file_bytes=4096"],
    ) as reme:
        report = reme.index()

        assert set(report.problems) == set(bad)
        assert "NUL" in report.problems["digest/wiki/binary.md"]
        assert "max_file_bytes" in report.problems["digest/wiki/huge.md"]
        assert "UTF-8" in report.problems["digest/wiki/latin1.md"]
        assert "status" in report.problems["digest/wiki/badstatus.md"]
        assert "invalid YAML" in report.problems["digest/wiki/badyaml.md"]
        # Broken frontmatter alone does not keep a note's text out of the index.
        readable = {"digest/wiki/badyaml.md", "digest/wiki/badstatus.md"}
        assert report.indexed == sorted([*EXAMPLE_FILES, *readable])

        status = reme.status()
        assert set(status["problems"]) == set(bad)
        assert status["files"] == len(EXAMPLE_FILES) + len(readable)
        for rel in set(bad) - readable:
            assert reme.catalog.note(rel) is None, rel
            assert rel not in chunk_paths(reme)
        for word in ("quokkabinary", "quokkahuge", "quokkalatin"):
            assert paths_for(reme, word) == [], word
        assert paths_for(reme, "quokkayaml") == ["digest/wiki/badyaml.md"]
        assert paths_for(reme, "quokkastatus") == ["digest/wiki/badstatus.md"]
        assert PERF in paths_for(reme, "shared_buffers")

        # Fixing a file clears its problem and indexes it.
        (workspace / "digest/wiki/latin1.md").write_text("# Cafe quokkalatin\n", "utf-8")
        fixed = reme.index()
        assert fixed.indexed == ["digest/wiki/latin1.md"]
        assert "digest/wiki/latin1.md" not in reme.status()["problems"]
        assert paths_for(reme, "quokkalatin") == ["digest/wiki/latin1.md"]


def test_a_file_that_turns_bad_loses_its_old_chunks(reme: Reme, workspace: Path) -> None:
    reme.index()
    assert PERF in paths_for(reme, "shared_buffers")
    (workspace / PERF).write_bytes(b"# Perf\n\x00binary now\nshared_buffers\n")
    report = reme.index()
    assert set(report.problems) == {PERF}
    assert PERF not in paths_for(reme, "shared_buffers")
    assert reme.catalog.note(PERF) is None
    assert PERF in reme.status()["problems"]


# -- reindex ---------------------------------------------------------------------------------


QUERIES = ["postgres", "pgbouncer pool", "deploy orjson", "migration lock", "数据库连接池"]


def results(reme: Reme) -> dict[str, dict]:
    return {q: reme.search(q, limit=50).model_dump() for q in QUERIES}


def matched_chunks(found: dict[str, dict]) -> dict[str, set[str]]:
    return {q: {hit["chunk_id"] for hit in r["hits"]} for q, r in found.items()}


def test_reindex_gives_the_same_results_as_a_full_incremental_scan(reme: Reme) -> None:
    reme.index()
    before = results(reme)
    status_before = reme.status()
    assert all(before[q]["hits"] for q in QUERIES)

    report = reme.reindex()
    assert report.indexed == EXAMPLE_FILES
    assert results(reme) == before
    status_after = reme.status()
    for key in ("files", "chunks", "unresolved_links", "problems"):
        assert status_after[key] == status_before[key], key


def test_reindex_after_incremental_changes(reme: Reme, workspace: Path) -> None:
    reme.index()
    (workspace / "digest/wiki/extra.md").write_text(
        "---\ntags: [postgres]\n---\n# Extra\n\npgbouncer pool notes\n", "utf-8"
    )
    (workspace / "digest/wiki/postgres-tuning.md").unlink()
    reme.index()
    incremental = results(reme)
    status_before = reme.status()
    # The keyword index keeps recent edits in a delta segment whose BM25 statistics are an
    # approximation, so ranks may differ until it is merged; what matches may not.
    reme.optimize()
    optimized = results(reme)

    report = reme.reindex()
    assert len(report.indexed) == len(EXAMPLE_FILES)  # one added, one removed
    rebuilt = results(reme)
    assert rebuilt == optimized
    assert matched_chunks(rebuilt) == matched_chunks(incremental)
    assert "digest/wiki/extra.md#0" in matched_chunks(rebuilt)["pgbouncer pool"]
    status_after = reme.status()
    for key in ("files", "chunks", "unresolved_links", "problems"):
        assert status_after[key] == status_before[key], key


def test_reindex_drops_projections_of_files_gone_behind_its_back(
    reme: Reme, workspace: Path
) -> None:
    reme.index()
    (workspace / PERF).unlink()
    reme.reindex()
    assert reme.catalog.note(PERF) is None
    assert PERF not in chunk_paths(reme)
    assert reme.tags.tags(PERF) == {}


# -- scope ---------------------------------------------------------------------------------


def test_excluded_and_hidden_files_are_not_indexed(
    workspace: Path, default_plugins: Plugins
) -> None:
    hidden = {
        ".obsidian/workspace.md": "# Obsidian\n\nwombatobsidian\n",
        ".hidden.md": "# Hidden\n\nwombathidden\n",
        "daily/.draft.md": "# Draft\n\nwombatdraft\n",
        ".git/notes.md": "# Git\n\nwombatgit\n",
        "drafts/idea.md": "# Idea\n\nwombatdrafts\n",
        "notes/image.png": "wombatpng\n",
    }
    for rel, text in hidden.items():
        (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        (workspace / rel).write_text(text, "utf-8")

    overrides = ['index.exclude=[".reme/**", ".git/**", ".obsidian/**", "**/.*", "drafts/**"]']
    with Reme.open(
        workspace, plugins=default_plugins, env=KEYWORD_ONLY_ENV, overrides=overrides
    ) as reme:
        report = reme.index()
        assert report.indexed == EXAMPLE_FILES
        assert report.problems == {}
        for rel in hidden:
            assert not reme.indexer.in_scope(rel), rel
            assert reme.catalog.note(rel) is None, rel
        for word in ("wombatobsidian", "wombathidden", "wombatdraft", "wombatgit", "wombatdrafts"):
            assert paths_for(reme, word) == [], word
        assert reme.indexer.in_scope(PERF)

        # The same scope holds for writes through the API: they land on disk but are not indexed.
        reme.files.write("drafts/later.md", "# Later\n\nwombatlater\n")
        reme.files.write(".obsidian/snippet.md", "# Snippet\n\nwombatsnippet\n")
        assert (workspace / "drafts/later.md").is_file()
        assert paths_for(reme, "wombatlater") == []
        assert paths_for(reme, "wombatsnippet") == []
        assert reme.index().removed == []


def test_a_plain_folder_exclude_holds_for_scan_and_api_writes_alike(
    workspace: Path, default_plugins: Plugins
) -> None:
    """An exclude entry without a glob (``drafts``) excludes the folder everywhere."""
    with Reme.open(
        workspace,
        plugins=default_plugins,
        env=KEYWORD_ONLY_ENV,
        overrides=['index.exclude=["drafts"]'],
    ) as reme:
        reme.index()
        reme.files.write("drafts/idea.md", "# Idea\n\nwombatplain\n")
        assert not reme.indexer.in_scope("drafts/idea.md")
        assert paths_for(reme, "wombatplain") == []
        assert reme.index().removed == []
        assert reme.catalog.note("drafts/idea.md") is None


# -- links and tags --------------------------------------------------------------------------


def test_dangling_link_resolves_when_the_target_appears_and_dangles_when_it_goes(
    reme: Reme,
) -> None:
    reme.index()
    source = "digest/wiki/caching.md"
    target = "digest/wiki/redis-cache.md"
    baseline = reme.status()["unresolved_links"]

    reme.files.write(source, "# Caching\n\nSee [[redis-cache]] for the details.\n")
    assert reme.status()["unresolved_links"] == baseline + 1
    (link,) = reme.graph.outbound(source)
    assert link.raw == "redis-cache" and link.target is None and link.state == "missing"

    reme.files.write(target, "# Redis cache\n\nTTL of five minutes.\n")
    (link,) = reme.graph.outbound(source)
    assert link.target == target and link.state == "resolved"
    assert [inbound.source for inbound in reme.graph.inbound(target)] == [source]
    assert reme.status()["unresolved_links"] == baseline

    deleted = reme.files.delete(target)
    assert deleted.inbound == [source]
    (link,) = reme.graph.outbound(source)
    assert link.target is None
    assert reme.graph.inbound(target) == []
    assert reme.status()["unresolved_links"] == baseline + 1


def test_dangling_link_resolves_through_a_scan_too(reme: Reme, workspace: Path) -> None:
    reme.index()
    unresolved = {link.raw for link in reme.graph.unresolved()}
    assert "digest/wiki/load-balancer" in unresolved
    (workspace / "digest/wiki/load-balancer.md").write_text("# LB\n\nnginx upstreams\n", "utf-8")
    report = reme.index()
    assert report.indexed == ["digest/wiki/load-balancer.md"]
    assert report.relinked >= 1
    assert "digest/wiki/load-balancer" not in {link.raw for link in reme.graph.unresolved()}
    inbound = {link.source for link in reme.graph.inbound("digest/wiki/load-balancer.md")}
    assert inbound == {"digest/wiki/larkspur-architecture.md"}


def test_frontmatter_tags_reach_the_tag_index(reme: Reme) -> None:
    reme.index()
    assert reme.tags.tags(PERF) == {"postgres": 1, "performance": 1, "larkspur": 1}
    counts = reme.tags.tags()
    assert counts["postgres"] == 6
    assert counts["day"] == 2
    assert reme.tags.paths(["heroku"]) == {HEROKU}

    reme.files.write("digest/wiki/tagged.md", "---\ntags: [Caching, '#Redis']\n---\n# Tagged\n")
    assert reme.tags.tags("digest/wiki/tagged.md") == {"caching": 1, "redis": 1}
    reme.files.update_frontmatter("digest/wiki/tagged.md", {"tags": ["memcached"]})
    assert reme.tags.tags("digest/wiki/tagged.md") == {"memcached": 1}
    assert "digest/wiki/tagged.md" not in reme.tags.paths(["caching"])


def test_catalog_records_frontmatter_fields(reme: Reme) -> None:
    reme.index()
    note = reme.catalog.note(HEROKU)
    assert note is not None
    assert note.status == "archived"
    assert note.name == "Hosting on Heroku (old)"
    assert str(note.date) == "2026-03-20"
    jsonl = reme.catalog.note("sessions/s-2026-11-02-deploy.jsonl")
    assert jsonl is not None and jsonl.status == "active"


def test_a_new_note_rereads_only_notes_whose_dangling_link_could_reach_it(
    reme: Reme, workspace: Path
) -> None:
    # Many notes with dangling links elsewhere must not be reread for every new note.
    reme.index()
    for i in range(5):
        reme.files.write(f"daily/2026-11-29/d{i}.md", f"# D{i}\n\nsee [[nowhere-{i}]]\n")
    before = reme.status()["unresolved_links"]
    (workspace / "digest/wiki/unrelated.md").write_text("# U\n\nno links\n", "utf-8")
    report = reme.index()
    assert report.indexed == ["digest/wiki/unrelated.md"] and report.relinked == 0
    (workspace / "digest/wiki/nowhere-3.md").write_text("# N3\n", "utf-8")
    report = reme.index()
    assert report.relinked == 1
    assert reme.status()["unresolved_links"] == before - 1
