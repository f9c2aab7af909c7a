"""Main's files memory-mapped at open (issue 21, a cheap first search) search exactly as the loader
they replaced: a frozen copy of the previous ``_load_main`` (every array read, ``vocab.json``
parsed into a dict, the ids split into a list, the rows marked with main's generation counted) is
the reference, over random queries, limits and filters, with tombstones and a delta, non-ASCII ids
and tokens, for two bm25s methods: same chunks, same order, the same floats. A main saved before
the terms table and the id ends existed (the files the previous version wrote) opens and searches
the same, and opening it writes nothing."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from reme_core.components import ComponentContext
from reme_core.testing.keyword_index import make_chunks
from reme_plugins.keyword_bm25s import Bm25sKeywordIndex, storage, terms
from reme_plugins.keyword_bm25s.saved_ids import SavedIds, id_ends
from reme_plugins.keyword_bm25s.segments import _Main, _Segment
from reme_plugins.keyword_bm25s.terms import TermTable, save_terms

# -- the previous loader, frozen (the reference) ---------------------------------------------------


def _old_load_main(folder: Path, generation: int) -> _Main | None:
    try:
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
        ids_text = (folder / "ids.txt").read_text(encoding="utf-8")
        ids = ids_text.split("\0") if ids_text else []
        hashes = np.load(folder / "hashes.npy", allow_pickle=False)
        lengths = np.load(folder / "lengths.npy", allow_pickle=False)
        seg = _old_load_segment(folder, len(ids)) if meta.get("indexed") else None
        return _Main(ids, hashes, seg, generation, lengths)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _old_load_segment(folder: Path, n_docs: int) -> _Segment:
    nonoccurrence = None
    if (folder / "nonoccurrence.npy").exists():
        nonoccurrence = np.load(folder / "nonoccurrence.npy", allow_pickle=False)
    return _Segment(
        np.load(folder / "data.npy", allow_pickle=False),
        np.load(folder / "indices.npy", allow_pickle=False),
        np.load(folder / "indptr.npy", allow_pickle=False),
        json.loads((folder / "vocab.json").read_text(encoding="utf-8")),
        n_docs,
        nonoccurrence,
    )


def _old_load_marked(conn: Any, main: _Main) -> list[tuple[str, int]]:
    delta = conn.execute("SELECT id, hash FROM chunks WHERE main = 0").fetchall()
    if not main.ids:
        return delta
    (in_main,) = conn.execute(
        "SELECT count(*) FROM chunks WHERE main = ?", (main.generation,)
    ).fetchone()
    if in_main != len(main.ids):
        live = {
            row[0]
            for row in conn.execute("SELECT id FROM chunks WHERE main = ?", (main.generation,))
        }
        main.set_dead(i for i, cid in enumerate(main.ids) if cid not in live)
    return delta


# -- a random workspace ----------------------------------------------------------------------------

_COMMON = ["meeting", "review", "project", "deploy", "budget", "garden", "café", "straße"]
_NEW_FILES = {"terms.npy", "terms.bin", "id_ends.npy"}
"""What main's folder holds beyond the files the previous version wrote."""


def _note(rng: random.Random, words: list[str], i: int) -> str:
    n = rng.choice((4, 10, 25, 60, 120))
    body = [rng.choice(_COMMON) if rng.random() < 0.3 else rng.choice(words) for _ in range(n)]
    return " ".join([*body, f"own{i}"])


def _path(i: int) -> str:
    return f"notes/{'é' if i % 3 else 'n'}{i:03d}-日記.md"


def _open(state: Path, method: str) -> Bm25sKeywordIndex:
    settings = Bm25sKeywordIndex.Settings(method=method, delta_merge_min=10**6)
    return Bm25sKeywordIndex(settings, ComponentContext(workspace=state.parent, state_dir=state))


def _workspace(
    state: Path, method: str, rng: random.Random, words: list[str], edits: bool = True
) -> None:
    """600 notes merged into main, then (``edits``) 60 edited and 20 deleted: tombstones and a
    delta."""
    ix = _open(state, method)
    try:
        for i in range(600):
            ix.upsert(_path(i), make_chunks(_path(i), _note(rng, words, i)))
        ix.optimize()
        if not edits:
            ix.flush()
            return
        for i in rng.sample(range(600), 60):
            ix.upsert(_path(i), make_chunks(_path(i), _note(rng, words, i)))
        for i in rng.sample(range(600), 20):
            ix.delete(_path(i))
        ix.flush()
        assert ix.stats()["tombstones"] > 0 and ix.stats()["delta_chunks"] > 0
    finally:
        ix.close()


def _main_folder(state: Path) -> Path:
    (folder,) = [p for p in (state / "bm25s").iterdir() if p.name.startswith("main-")]
    return folder


def _files(state: Path) -> dict[str, bytes]:
    root = state / "bm25s"
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _answers(ix: Bm25sKeywordIndex, rng: random.Random, words: list[str]) -> list[Any]:
    """Random searches' hits (unfiltered, then filtered), then the index's counts and ids."""
    every = sorted(ix.chunk_ids())
    out: list[Any] = []
    for q in range(240):
        query = " ".join(
            rng.choice(_COMMON) if rng.random() < 0.4 else rng.choice(words)
            for _ in range(rng.randint(1, 6))
        )
        limit = rng.choice((1, 5, 25, 100))
        share = (None, 3, 40, 1)[q % 4] if q >= 120 else None  # unfiltered first
        allowed = None if share is None else set(rng.sample(every, len(every) // share))
        out.append(ix.search(query, limit, allowed))
    return [*out, ix.stats(), sorted(ix.chunk_ids())]


@pytest.mark.parametrize("method", ["lucene", "bm25l"])
def test_mapped_main_searches_as_the_previous_loader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    rng = random.Random(method)
    words = [f"w{i}" for i in range(300)] + [f"wörd{i}" for i in range(50)]
    state = tmp_path / ".reme"
    _workspace(state, method, rng, words)
    assert {p.name for p in _main_folder(state).iterdir()} >= _NEW_FILES
    seed = rng.random()

    ix = _open(state, method)
    try:
        got = _answers(ix, random.Random(seed), words)
        view = ix._view
        assert view is not None and view.main.seg is not None
        seg, ids = view.main.seg, view.main.ids
        arrays = [seg.data, seg.indices, seg.indptr, view.main.hashes, view.main.lengths]
        if method == "bm25l":
            arrays.append(seg.nonoccurrence)
        for array in arrays:  # plain arrays over the files' pages
            assert type(array) is np.ndarray and isinstance(array.base, np.memmap)
        assert isinstance(seg.vocab, TermTable) and isinstance(ids, SavedIds)
    finally:
        ix.close()
    with monkeypatch.context() as patch:
        patch.setattr(storage, "_load_main", _old_load_main)
        patch.setattr(storage, "_load_marked", _old_load_marked)
        old = _open(state, method)
        try:
            want = _answers(old, random.Random(seed), words)
            assert isinstance(old._main.ids, list) and isinstance(old._main.seg.vocab, dict)
        finally:
            old.close()
    assert got == want
    assert sum(len(hits) for hits in got[:-2]) > 2000  # most queries match something


def test_unfiltered_searches_decode_only_their_hits_ids(tmp_path: Path) -> None:
    rng = random.Random(3)
    words = [f"w{i}" for i in range(300)]
    state = tmp_path / ".reme"
    _workspace(state, "lucene", rng, words, edits=False)  # no tombstones: finding them lists ids
    ix = _open(state, "lucene")
    try:
        for _ in range(50):
            ix.search(" ".join(rng.sample([*_COMMON, *words], 3)), 10)
        ids = ix._main.ids
        assert isinstance(ids, SavedIds) and ids._list is None  # no list of every id built
        assert ix.search("meeting review", 5, set(ix.chunk_ids()))  # a filter mask builds it
        assert ids._list is not None
    finally:
        ix.close()


def test_main_saved_before_the_terms_table_opens_and_searches_the_same(tmp_path: Path) -> None:
    """What a user with an index from the previous version sees: it opens and every search
    answers the same, nothing is rebuilt or written; its next merge writes the new files."""
    rng = random.Random(11)
    words = [f"w{i}" for i in range(300)] + [f"wörd{i}" for i in range(50)]
    state = tmp_path / ".reme"
    _workspace(state, "lucene", rng, words)
    seed = rng.random()
    ix = _open(state, "lucene")
    try:
        want = _answers(ix, random.Random(seed), words)
    finally:
        ix.close()
    folder = _main_folder(state)
    for name in _NEW_FILES:
        (folder / name).unlink()
    assert {p.name for p in folder.iterdir()} == {
        *("data.npy", "indices.npy", "indptr.npy", "vocab.json"),
        *("hashes.npy", "lengths.npy", "ids.txt", "meta.json"),
    }  # what the previous version saved
    before = _files(state)

    ix = _open(state, "lucene")
    try:
        assert _answers(ix, random.Random(seed), words) == want
        assert isinstance(ix._main.seg.vocab, dict)
        assert ix.delta_builds == 1  # the delta rebuilt from its rows, main not rebuilt
    finally:
        ix.close()
    assert _files(state) == before  # opening, searching and closing wrote nothing
    ix = _open(state, "lucene")
    try:
        ix.optimize()
        ix.flush()
        assert {p.name for p in _main_folder(state).iterdir()} >= _NEW_FILES
    finally:
        ix.close()


def test_term_table_finds_every_token_and_no_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(5)
    letters = "abcdefghijklmnopqrstuvwxyzéß日"
    vocab: dict[str, int] = {}
    by_crc: dict[int, str] = {}
    collided: list[str] = []
    while len(collided) < 2 or len(vocab) < 2000:  # two tokens with the same CRC-32 among them
        token = "".join(rng.choice(letters) for _ in range(rng.randint(1, 9)))
        if token in vocab:
            continue
        crc = zlib.crc32(token.encode("utf-8"))
        if crc in by_crc and not collided:
            collided = [by_crc[crc], token]
        if len(collided) < 2:
            by_crc[crc] = token
        vocab[token] = len(vocab)
        if len(vocab) > 400_000:
            break
    assert len(collided) == 2
    save_terms(vocab, tmp_path)
    table = TermTable.open(tmp_path)
    assert table is not None and len(table) == len(vocab)
    assert all(table.get(token) == i for token, i in vocab.items())
    assert [table.get(t) for t in collided] == [vocab[t] for t in collided]
    absent = [t + "q" for t in list(vocab)[:500] if t + "q" not in vocab]
    assert all(table.get(t) is None and t not in table for t in absent)
    assert list(table) == list(vocab) and table["".join(collided[:1])] == vocab[collided[0]]
    with pytest.raises(KeyError):
        table[absent[0]]
    monkeypatch.setattr(terms, "_MEMO_SIZE", 7)  # the memo of recent lookups, replaced when full
    fresh = TermTable.open(tmp_path)
    for _ in range(2):
        assert all(fresh.get(t) == i for t, i in vocab.items())
        assert all(fresh.get(t, -1) == -1 for t in absent)
        assert len(fresh._memo) <= 7

    save_terms({}, tmp_path)
    empty = TermTable.open(tmp_path)
    assert empty is not None and len(empty) == 0 and empty.get("a") is None
    assert TermTable.open(tmp_path / "missing") is None


def test_saved_ids_read_as_their_list(tmp_path: Path) -> None:
    ids = ["a.md#0", "日記/é.md#1", "", "b.md#12"]
    raw = "\0".join(ids).encode("utf-8")
    (tmp_path / "ids.txt").write_bytes(raw)
    scanned = SavedIds.open(tmp_path)  # no id_ends.npy: the ends are scanned for
    np.save(tmp_path / "id_ends.npy", id_ends(raw))
    saved = SavedIds.open(tmp_path)
    for got in (scanned, saved):
        assert len(got) == 4 and [got[i] for i in range(4)] == ids and got[-1] == ids[-1]
        with pytest.raises(IndexError):
            got[4]
        assert list(got) == ids and got[1:3] == ids[1:3]
    (tmp_path / "ids.txt").write_bytes(b"")
    (tmp_path / "id_ends.npy").unlink()
    assert len(SavedIds.open(tmp_path)) == 0 and list(SavedIds.open(tmp_path)) == []
    np.save(tmp_path / "id_ends.npy", np.array([3], dtype=np.uint32))  # ends past the ids
    with pytest.raises(ValueError):
        SavedIds.open(tmp_path)


def test_first_search_after_open_imports_nothing_more(tmp_path: Path) -> None:
    """The first search from disk imports neither bm25s (nor scipy) nor numpy.ma: np.unique,
    which the pruned selection used, imports numpy.ma (~20 ms of a first search)."""
    state = tmp_path / ".reme"
    _workspace(state, "lucene", random.Random(2), [f"w{i}" for i in range(300)], edits=False)
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from reme_core.components import ComponentContext\n"
        "from reme_plugins.keyword_bm25s import Bm25sKeywordIndex, scoring\n"
        "scoring._PRUNE_ABOVE = 0\n"
        f"state = Path({str(state)!r})\n"
        "settings = Bm25sKeywordIndex.Settings(delta_merge_min=10**6)\n"
        "ix = Bm25sKeywordIndex(settings, ComponentContext(workspace=state.parent, state_dir=state))\n"
        "before = set(sys.modules)\n"
        "assert ix.search('meeting review w1 w2', 5)\n"
        "ix.close()\n"
        "print(sorted(m for m in set(sys.modules) - before if m.split('.')[0] in "
        "('bm25s', 'scipy', 'numpy')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]", done.stdout
