"""The purge's proof (``remaining``) fails when something is left: each removal step skipped in
turn leaves a trace the report names (a cached embedding, a vector, a history blob, a proposal
that only links the note), and a trace planted after a clean purge is found in every form it
takes (the path without ``.md``, a word lower-cased as a keyword index keeps it, a chunk's
digest, the note's blob in the history), while what another note still holds is not counted
(issue 24)."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from reme_core.review import ReviewApi
from reme_core.review.store import ProposalStore
from reme_core.runtime import Reme
from reme_core.service import forget as forget_module
from reme_core.service.forget_proof import proof_needles, traces
from tests.service.test_forget import OTHER, OTHER_TEXT, SECRET, forget, reme

__all__ = ["reme"]  # the fixture, shared

STEM = SECRET.removesuffix(".md")
GATE = "notes/gate.md"
GATE_TEXT = "---\nname: Gate\n---\n# Gate\n\nCode Kestrel42Gate.\n"
"""Every line shorter than the proof's line length: only its word, ids and path find it."""


def link_only_proposal(reme: Reme) -> Path:
    """A pending change to another note that names the purged one only by a wikilink."""
    proposal = ReviewApi(reme).propose(
        pipeline="dream",
        step=None,
        run_id="r2",
        verb="REFINE",
        target=OTHER,
        content=OTHER_TEXT + f"\nSee [[{STEM}]].\n",
        before=OTHER_TEXT,
        base_hash=None,
    )
    return ProposalStore(reme.state_dir).path(proposal.id)


def skip_vector_removal(reme: Reme, monkeypatch: pytest.MonkeyPatch) -> None:
    assert reme.vectors is not None
    monkeypatch.setattr(reme.vectors.store, "delete_paths", lambda paths: None)
    monkeypatch.setattr(forget_module, "_rebuild_vectors", lambda reme: None)


@pytest.mark.parametrize("left", ["cached embedding", "vector", "history blob", "proposal"])
def test_a_skipped_removal_is_named_in_remaining(
    reme: Reme, monkeypatch: pytest.MonkeyPatch, left: str
) -> None:
    proposal = link_only_proposal(reme)
    if left == "cached embedding":
        monkeypatch.setattr(forget_module, "drop_cached_embeddings", lambda db, digests: 0)
        expected = ".reme/embeddings.sqlite3"
    elif left == "vector":
        skip_vector_removal(reme, monkeypatch)
        folder = Path(reme.vectors.store.state_files()[0]).relative_to(reme.state_dir)
        expected = f".reme/{folder.parts[0]}"
    elif left == "history blob":
        monkeypatch.setattr(forget_module, "purge_history", lambda history, paths, **kw: 0)
        expected = "history"
    else:
        monkeypatch.setattr(forget_module, "_drop_proposals", lambda *args: [])
        expected = ".reme/" + proposal.relative_to(reme.state_dir).as_posix()

    report = forget(reme, path=SECRET, purge=True, confirm=True)

    remaining = report["remaining"]
    assert any(r == expected or r.startswith(expected + "/") for r in remaining), remaining


def test_a_proposal_linking_the_note_by_its_name_alone_is_dropped(reme: Reme) -> None:
    proposal = link_only_proposal(reme)
    report = forget(reme, path=SECRET, purge=True, confirm=True)
    assert not proposal.exists() and report["remaining"] == []
    assert proposal.stem in report["removed"]["proposals"]


def git_store(reme: Reme, data: bytes) -> str:
    """Write ``data`` into the history's object store as a loose blob (as an old version would
    be); returns its id."""
    done = subprocess.run(
        ["git", f"--git-dir={reme.history.git_dir}", "hash-object", "-w", "--stdin"],
        input=data,
        capture_output=True,
        check=True,
    )
    return done.stdout.decode().strip()


def test_every_form_of_a_trace_planted_after_a_clean_purge_is_found(reme: Reme) -> None:
    reme.files.write(GATE, GATE_TEXT)
    catalog = reme.catalog
    chunks = catalog.chunk_hashes([GATE])
    needles = proof_needles(
        {GATE: GATE_TEXT.encode()},
        chunks,
        kept_digests={d for _, p, d in catalog.chunk_hashes() if p != GATE},
        kept_hashes={h for p, h in catalog.hashes().items() if p != GATE},
    )
    report = forget(reme, path=GATE, purge=True, confirm=True)
    assert report["remaining"] == [] == traces(reme, needles)
    state = reme.state_dir
    digest = chunks[0][2]

    def found_after(plant: Any) -> list[str]:
        undo = plant()
        try:
            return traces(reme, needles)
        finally:
            undo()

    def file_with(name: str, data: bytes) -> Any:
        def plant() -> Any:
            (state / name).write_bytes(data)
            return lambda: (state / name).unlink()

        return plant

    def cached_embedding() -> Any:
        db = state / "left.sqlite3"
        with sqlite3.connect(db) as conn:
            conn.execute("CREATE TABLE vectors (model_id TEXT, content_hash TEXT, vector BLOB)")
            conn.execute("INSERT INTO vectors VALUES ('hash', ?, x'00')", (digest,))
        conn.close()
        return lambda: db.unlink()

    assert found_after(file_with("link.json", b'{"target": "notes/gate"}')) == [".reme/link.json"]
    assert found_after(file_with("vocab.json", b'["code", "kestrel42gate"]')) == [
        ".reme/vocab.json"
    ]
    assert found_after(file_with("raw.bin", b"\x00" + bytes.fromhex(digest))) == [".reme/raw.bin"]
    assert found_after(cached_embedding) == [".reme/left.sqlite3"]
    git_store(reme, GATE_TEXT.encode())
    assert traces(reme, needles) == ["history"]


def test_what_another_note_still_holds_is_not_a_trace(reme: Reme) -> None:
    quoting = "notes/quoting.md"
    reme.files.write(GATE, GATE_TEXT)
    needles = proof_needles({GATE: GATE_TEXT.encode()}, reme.catalog.chunk_hashes([GATE]))
    reme.files.write(quoting, "# Quoting\n\nThe gate ([[notes/gate]]) had Kestrel42Gate.\n")
    assert forget(reme, path=GATE, purge=True, confirm=True)["remaining"] == []
    # The other note's words are in the index (and grep finds them), but they are its own.
    assert traces(reme, needles) == []
    (reme.state_dir / "stale.json").write_text('{"from": "notes/gate"}')
    assert traces(reme, needles) == []  # the quoting note links it so
    reme.files.write(quoting, "# Quoting\n\nThe gate had a code.\n")
    assert ".reme/stale.json" in traces(reme, needles)  # no note holds it now


def test_a_note_never_indexed_is_purged_with_the_links_to_it_unresolved(reme: Reme) -> None:
    copied = "daily/2026-11-05/copied.md"
    (reme.root / copied).parent.mkdir(parents=True, exist_ok=True)
    (reme.root / copied).write_text("# Copied\n\nCopied in, code Heron77Dusk.\n")  # no index
    reme.files.write("notes/cites.md", "# Cites\n\n- [[daily/2026-11-05/copied]]\n")
    assert copied not in reme.catalog.hashes()
    report = forget(reme, path=copied, purge=True, confirm=True)
    assert report["remaining"] == [] and report["removed"]["chunks"] == 1
    assert list(report["citations"]["citing"]) == ["notes/cites.md"]
    assert [link.state for link in reme.graph.outbound("notes/cites.md")] == ["missing"]


def test_purging_an_image_lists_the_resource_note_that_embeds_it(reme: Reme) -> None:
    image = "resource/inbox/pier.png"
    (reme.root / image).parent.mkdir(parents=True, exist_ok=True)
    (reme.root / image).write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 32)
    described = "daily/2026-11-06/resource-pier.md"
    reme.files.write(
        described,
        f"---\nsource_resource: '[[{image}]]'\n---\n# Pier\n\nFerry at 09:40.\n\n![[{image}]]\n",
    )
    assert [link.state for link in reme.graph.outbound(described)] == ["missing", "missing"]
    dry = forget(reme, path=image, purge=True, dry_run=True)
    report = forget(reme, path=image, purge=True, confirm=True)
    for found in (dry, report):
        lines = [c["text"] for c in found["citations"]["citing"][described]]
        assert lines == [f"source_resource: '[[{image}]]'", f"![[{image}]]"]
    assert not (reme.root / image).exists() and (reme.root / described).exists()
