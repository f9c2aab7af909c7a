"""Drift between the catalog, the projections and the files: reported by status, repaired by index.

The crash tests run a writer in a child process and kill it with SIGKILL (at a chosen point, or
at random points of a burst of writes, moves, deletes and optimizes), then reopen the workspace,
run ``Reme.index()`` and check every projection against the files on disk, by content.
"""

from __future__ import annotations

import hashlib
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import FAKE_VECTORS, KEYWORD_ONLY_ENV

from reme_core.plugins import Plugins
from reme_core.runtime import Reme
from reme_core.schema.chunk import chunk_path
from reme_core.workspace import LinkResolver, parse_note
from reme_plugins.keyword_bm25s import text_hash
from reme_plugins.tag_sqlite import normalise_tag

BURST = Path(__file__).with_name("crash_burst.py")
CHILD_ENV = {k: v for k, v in os.environ.items() if not k.startswith("REME_")}
"""The children configure themselves (hash embedding, local store): no REME_* from the host."""
NOTE = "digest/wiki/drift-note.md"
WORD = re.compile(r"\buniq\w+")


def open_vectors(root: Path, plugins: Plugins) -> Reme:
    return Reme.open(root, plugins=plugins, env={}, overrides=FAKE_VECTORS)


def sha(data: bytes | str) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def assert_projections_match_disk(reme: Reme) -> None:
    """Catalog, keyword index, tags, graph and vectors hold exactly what the files say."""
    root = reme.root
    on_disk = reme.indexer.scope_files()
    texts = {path: (root / path).read_text("utf-8") for path in on_disk}
    assert reme.catalog.hashes() == {p: sha((root / p).read_bytes()) for p in on_disk}
    assert reme.catalog.problems() == {}

    expected: dict[str, str] = {}
    for path, text in texts.items():
        chunker = reme.chunkers[Path(path).suffix.lower()]
        expected.update({c.id: c.text for c in chunker.chunk(path, text)})
    assert {cid: text for cid, _, text in reme.catalog.chunk_rows()} == expected

    # Keyword index: the ids in memory, the texts it persisted, and each note found by its word.
    assert reme.keyword.chunk_ids() == set(expected)
    with sqlite3.connect(reme.state_dir / "bm25s" / "rows.sqlite3") as db:
        persisted = dict(db.execute("SELECT id, hash FROM chunks"))
    assert persisted == {cid: text_hash(text) for cid, text in expected.items()}
    holders: dict[str, set[str]] = {}  # a move killed half-way leaves its note twice on disk
    for path, text in texts.items():
        for word in WORD.findall(text):
            holders.setdefault(word, set()).add(path)
    for word, paths in holders.items():
        hits = reme.keyword.search(word, 20)
        assert {chunk_path(cid) for cid, _ in hits} == paths, (word, hits)

    # Tags and links, as parsing the files gives them.
    resolver = LinkResolver(on_disk)
    tagged = set()
    for path, text in texts.items():
        if not path.endswith(".md"):
            continue
        tags = {normalise_tag(t) for t in parse_note(path, text).tags} - {""}
        assert set(reme.tags.tags(path)) == tags, path
        if tags:
            tagged.add(path)
        links = [(link.raw, link.target, link.state) for link in resolver.links_for(path, text)]
        stored = [(link.raw, link.target, link.state) for link in reme.graph.outbound(path)]
        assert stored == links, path
    assert reme.tags.tagged_paths() == tagged
    assert reme.graph.sources() <= set(texts)

    # Vectors: one per chunk, each the embedding of the chunk's current text.
    vectors = reme.vectors
    assert vectors is not None and vectors.available
    assert vectors.store.ids() == set(expected)
    with sqlite3.connect(reme.state_dir / "vectors.sqlite3") as db:
        stored_vectors = dict(db.execute("SELECT chunk_id, vector FROM vectors"))
    ids = sorted(expected)
    want = vectors.embedding.embed_passages([vectors.embedding.truncate(expected[c]) for c in ids])
    for cid, vector in zip(ids, want, strict=True):
        got = np.frombuffer(stored_vectors[cid], dtype=np.float32)
        assert np.allclose(got, vector, atol=1e-5), cid


# -- planted drift -------------------------------------------------------------------------------


def test_status_reports_planted_drift_and_index_repairs_it(
    workspace: Path, default_plugins: Plugins
) -> None:
    with open_vectors(workspace, default_plugins) as reme:
        reme.index()
        clean = reme.status()["drift"]
        assert clean["found"] is False and clean["problems"] == []
        assert_projections_match_disk(reme)
    perf = "daily/2026-11-10/session-perf-tuning.md"
    # What a crash between two projections leaves: chunks one index lacks, orphans of a path
    # the catalog no longer has.
    state = workspace / ".reme"
    with sqlite3.connect(state / "bm25s" / "rows.sqlite3") as db:
        db.execute("DELETE FROM chunks WHERE id LIKE ?", (f"{perf}#%",))
        db.execute("INSERT INTO chunks VALUES ('gone/old.md#0', 1, 0, 'zebraorphan')")
    with sqlite3.connect(state / "tags.sqlite3") as db:
        db.execute("INSERT INTO tags VALUES ('gone/old.md', 'stale')")
    with sqlite3.connect(state / "graph.sqlite3") as db:
        db.execute(
            "INSERT INTO links VALUES ('gone/old.md', 0, 'x', NULL, NULL, NULL, 0, 1, 'missing')"
        )
    with sqlite3.connect(state / "vectors.sqlite3") as db:
        db.execute("DELETE FROM vectors WHERE path = ?", (perf,))

    with open_vectors(workspace, default_plugins) as reme:
        drift = reme.status()["drift"]
        assert drift["found"] is True
        assert drift["keyword"]["missing"] >= 1 and drift["keyword"]["orphans"] == 1
        assert drift["keyword"]["sample"] == [perf, "gone/old.md"]
        assert drift["tags"] == {"missing": 0, "orphans": 1, "sample": ["gone/old.md"]}
        assert drift["graph"] == {"orphans": 1, "sample": ["gone/old.md"]}
        assert drift["vectors"]["missing"] >= 1 and drift["vectors"]["sample"] == [perf]
        assert any(line.startswith("keyword index:") and perf in line for line in drift["problems"])
        # The keyword arm lost the note: only the repair brings it back.
        assert perf not in {h.path for h in reme.search("shared_buffers", limit=20).hits}

        report = reme.index()
        assert report.indexed == [] and report.removed == []
        assert set(report.repaired) == {perf, "gone/old.md"}
        assert report.drift == drift["problems"]
        after = reme.status()["drift"]
        assert after["found"] is False and after["count"] == 0, after
        assert_projections_match_disk(reme)
        hits = reme.search("shared_buffers", limit=20).hits
        assert any(h.path == perf and "keyword" in h.arm_ranks for h in hits)


def test_status_reports_files_the_index_has_not_seen(
    workspace: Path, default_plugins: Plugins
) -> None:
    with open_vectors(workspace, default_plugins) as reme:
        reme.index()
        (workspace / NOTE).write_text("# New\n\nnot indexed yet\n")
        (workspace / "digest/wiki/old-hosting-heroku.md").unlink()
        files = reme.status()["drift"]["files"]
        assert files == {
            "unindexed": 1,
            "vanished": 1,
            "sample": [NOTE, "digest/wiki/old-hosting-heroku.md"],
        }
        reme.index()
        assert reme.status()["drift"]["found"] is False


def test_reindex_rebuilds_every_projection_from_the_notes(
    workspace: Path, default_plugins: Plugins
) -> None:
    with open_vectors(workspace, default_plugins) as reme:
        reme.index()
    with sqlite3.connect(workspace / ".reme" / "bm25s" / "rows.sqlite3") as db:
        db.execute("UPDATE chunks SET text = 'stale', hash = 1")  # same ids, old texts
        db.execute("INSERT INTO chunks VALUES ('gone/old.md#0', 1, 0, 'orphan')")
    with open_vectors(workspace, default_plugins) as reme:
        assert reme.status()["drift"]["keyword"]["orphans"] == 1
        reme.reindex()
        assert reme.status()["drift"]["found"] is False
        assert_projections_match_disk(reme)
    with open_vectors(workspace, default_plugins) as reme:  # and so it stays, once reloaded
        assert reme.status()["drift"]["found"] is False
        assert_projections_match_disk(reme)


# -- killed at a chosen point --------------------------------------------------------------------

KILLED_WRITER = """
import os, signal, sys
from reme_core.runtime import Reme
from reme_plugins.keyword_bm25s import Bm25sKeywordIndex

root, where, path, text = sys.argv[1:5]
with Reme.open(root, overrides={overrides!r}) as reme:
    reme.index()
    setattr(Bm25sKeywordIndex, where, lambda self: os.kill(os.getpid(), signal.SIGKILL))
    if path == "--reindex":
        reme.reindex()
    else:
        reme.files.write(path, text)
"""


def run_killed(root: Path, where: str, path: str, text: str = "") -> None:
    """Open ``root`` in a child, then SIGKILL it when the keyword index's ``where`` is called
    by the write of ``path`` (or by a reindex): after the catalog, tags and graph committed."""
    script = KILLED_WRITER.format(overrides=FAKE_VECTORS)
    done = subprocess.run(
        [sys.executable, "-c", script, str(root), where, path, text],
        capture_output=True,
        text=True,
        timeout=120,
        env=CHILD_ENV,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr


def test_an_edit_killed_before_the_keyword_index_persisted_is_applied_again(
    workspace: Path, default_plugins: Plugins
) -> None:
    (workspace / NOTE).write_text("# Drift\n\nThe walrusold lives here.\n")
    with open_vectors(workspace, default_plugins) as reme:
        reme.index()
    # Same chunk ids, new text: the catalog commits it, the keyword index never persists it.
    run_killed(workspace, "flush", NOTE, "# Drift\n\nThe narwhalnew lives here.\n")

    with open_vectors(workspace, default_plugins) as reme:
        drift = reme.status()["drift"]
        assert drift["interrupted"] == {"paths": 1, "rebuild": False, "sample": [NOTE]}
        assert drift["keyword"]["missing"] == drift["keyword"]["orphans"] == 0  # ids agree
        assert reme.keyword.search("narwhalnew", 5) == []  # the old text is what it holds
        report = reme.index()
        assert report.repaired == [NOTE] and report.indexed == []
        assert reme.status()["drift"]["found"] is False
        assert [c for c, _ in reme.keyword.search("narwhalnew", 5)] == [f"{NOTE}#0"]
        assert reme.keyword.search("walrusold", 5) == []
        assert_projections_match_disk(reme)


def test_a_reindex_killed_half_way_is_redone_by_the_next_index(
    workspace: Path, default_plugins: Plugins
) -> None:
    with open_vectors(workspace, default_plugins) as reme:
        reme.index()
        files = reme.status()["files"]
    # Killed after every projection was cleared and refilled, before the keyword index wrote
    # a single chunk: the catalog says every file is indexed and unchanged.
    run_killed(workspace, "refresh", "--reindex")

    with open_vectors(workspace, default_plugins) as reme:
        drift = reme.status()["drift"]
        assert drift["interrupted"]["rebuild"] is True
        assert drift["keyword"]["missing"] == reme.status()["chunks"] > 0
        report = reme.index()
        assert len(report.indexed) == files and report.drift
        assert reme.status()["drift"]["found"] is False
        assert_projections_match_disk(reme)


# -- killed at random points of a burst ------------------------------------------------------------


def crash_iterations(
    root: Path, plugins: Plugins, iterations: int, seed: int
) -> list[dict[str, object]]:
    """Start the burst writer, kill it after a seeded random delay, repair, check; repeat."""
    rng = random.Random(seed)
    figures = []
    for i in range(iterations):
        child = subprocess.Popen(
            [sys.executable, str(BURST), str(root), str(seed * 100 + i)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=CHILD_ENV,
        )
        try:
            ready = child.stdout.readline() if child.stdout else ""
            assert ready.strip() == "ready", child.stderr.read() if child.stderr else ""
            time.sleep(rng.uniform(0.05, 0.6))
            child.send_signal(signal.SIGKILL)
            out, err = child.communicate(timeout=60)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        assert child.returncode == -signal.SIGKILL, err
        ops = [line.split()[2] for line in out.splitlines() if line.startswith("op ")]
        with open_vectors(root, plugins) as reme:
            before = reme.status()["drift"]
            report = reme.index()
            after = reme.status()["drift"]
            assert after["found"] is False, (i, before, report, after)
            assert_projections_match_disk(reme)
        figures.append(
            {
                "iteration": i,
                "ops": len(ops),
                "killed_in": ops[-1] if ops else None,
                "drift_before": before["count"],
                # New or vanished files a kill left unindexed: the scan's ordinary work.
                "files_before": before["files"]["unindexed"] + before["files"]["vanished"],
                "interrupted_paths": before["interrupted"]["paths"],
                "repaired": len(report.repaired),
                "drift_after": after["count"],
            }
        )
    return figures


def report_figures(figures: list[dict[str, object]]) -> None:
    for row in figures:
        print("crash", row)
    found = sum(1 for row in figures if row["drift_before"])
    projections = sum(1 for row in figures if row["drift_before"] != row["files_before"])
    print(
        f"crash: {len(figures)} kills, drift found before repair after {found} "
        f"({projections} in the projections, not only unindexed files), after repair 0"
    )


def test_a_burst_killed_at_random_points_always_repairs(root: Path, default_plugins: Plugins):
    figures = crash_iterations(root, default_plugins, iterations=8, seed=7)
    report_figures(figures)
    assert len(figures) == 8 and all(row["drift_after"] == 0 for row in figures)
    assert sum(int(row["ops"]) for row in figures) > 0


@pytest.mark.slow
def test_a_longer_burst_killed_at_random_points_always_repairs(
    root: Path, default_plugins: Plugins
) -> None:
    figures = crash_iterations(root, default_plugins, iterations=25, seed=11)
    report_figures(figures)
    assert all(row["drift_after"] == 0 for row in figures)


def test_tags_the_tag_index_lost_are_reported_and_repaired(
    workspace: Path, default_plugins: Plugins
) -> None:
    wiki = "digest/wiki/postgres-tuning.md"
    bare = "digest/wiki/bare-tag.md"  # its only tag normalises to nothing: never drift
    (workspace / bare).write_text("---\ntags: ['#']\n---\n# Bare\n\nNo real tag.\n", "utf-8")
    with Reme.open(workspace, plugins=default_plugins, env=KEYWORD_ONLY_ENV) as reme:
        reme.index()
        assert reme.tags.tags(wiki) and reme.status()["drift"]["found"] is False
    with sqlite3.connect(workspace / ".reme" / "tags.sqlite3") as db:
        db.execute("DELETE FROM tags WHERE path = ?", (wiki,))
    with Reme.open(workspace, plugins=default_plugins, env=KEYWORD_ONLY_ENV) as reme:
        drift = reme.status()["drift"]
        assert drift["tags"] == {"missing": 1, "orphans": 0, "sample": [wiki]}
        assert reme.index().repaired == [wiki]
        assert reme.tags.tags(wiki) and reme.status()["drift"]["found"] is False
