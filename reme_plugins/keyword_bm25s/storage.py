"""The keyword index on disk, under ``<state_dir>/bm25s/``: the rows database and main's files.

- ``rows.sqlite3``: one row per live chunk: id, a 60-bit content hash, which main generation
  indexes it (0: the delta), and its text, unless the indexer attached the catalog as the text
  source (``attach_text_source``): then texts are read back from the catalog when a merge or a
  reopened delta needs them (checked against the hash; a chunk whose text is gone is dropped, and
  the indexer's drift check then repairs it), so they are stored once per workspace, not twice;
- ``main-<generation>/``: main's arrays (``data``, ``indices``, ``indptr``, and bm25l/bm25+'s
  ``nonoccurrence``) and vocabulary as bm25s built them (``indices``, the chunk of each posting,
  saved and searched as uint16 while main holds at most 65,536 chunks, uint32 beyond), the
  vocabulary again as a table searched in place (``terms``), its chunk ids (``ids.txt``, with
  ``id_ends.npy``: ``saved_ids``), hashes and token counts;
- ``manifest.json``: the current main folder and the parameters it was built with.

Opening reads nothing; the first search (or write) memory-maps main's files (a search then reads
only the pages of its tokens' postings and of its hits' ids; a main saved before the terms table
and the id ends existed has its vocabulary parsed and its ids scanned instead, and searches the
same) and derives delta and tombstones
from the rows' generation marks: delta rows are those marked 0 (a partial index finds them), and
main chunks without a row marked with main's generation are tombstones. A merge marks every row
with the new generation in one transaction before main is saved; when the manifest's generation and
the rows' disagree (a crash between the two, files edited by hand) the load compares every row's
hash with main's instead, as older versions always did, and marks the rows again, so whichever of
the files a crash left new or old, the loaded state is consistent.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np

from reme_core.api import Chunk
from reme_core.api import compact_sqlite as compact
from reme_plugins.keyword_bm25s.saved_ids import ENDS, IDS, SavedIds, id_ends
from reme_plugins.keyword_bm25s.segments import _Main, _Segment
from reme_plugins.keyword_bm25s.terms import TermTable, save_terms
from reme_plugins.sqlite_util import LockedDb

log = logging.getLogger(__name__)

FORMAT_VERSION = 3  # 3: main in own files, read without bm25s; rows marked by main generation
SCHEMA_VERSION = 2
SCHEMA = """
CREATE TABLE IF NOT EXISTS chunks (
    id TEXT PRIMARY KEY,
    hash INTEGER NOT NULL,
    main INTEGER NOT NULL DEFAULT 0,
    text TEXT
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS chunks_delta ON chunks (main) WHERE main = 0;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
_ROWS_DB = "rows.sqlite3"
_MAIN_GENERATION = "main_generation"
_MANIFEST = "manifest.json"
_META = "meta.json"
_MAIN_PREFIX = "main-"
_TMP_SUFFIX = ".tmp"
_FETCH_BATCH = 500  # SQLite's default limit on bound parameters is 999

Row = tuple[str, int, int, str | None]
"""(chunk id, content hash, main generation that indexes it or 0, text or None) as stored."""


def text_hash(text: str) -> int:
    """A chunk text's hash as rows store it: the first 60 bits of its SHA-256 (fits SQLite's
    INTEGER and numpy's int64; it only tells an edited chunk from an unchanged one)."""
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:15], 16)


def _chunk_hash(chunk: Chunk) -> int:
    return int(chunk.content_hash[:15], 16)


# -- main's files --------------------------------------------------------------------------------


def _open_main(directory: Path, params: dict[str, Any]) -> tuple[_Main, bool]:
    """Main as the manifest names it, and whether it is exactly that main (built with ``params``
    and readable); an empty main of the manifest's generation otherwise."""
    manifest = _read_manifest(directory)
    generation = int(manifest.get("generation", 0))
    main = _Main(generation=generation)
    name = manifest.get("main")
    exact = manifest.get("params") == params or not name  # main is what it says
    if name and exact:
        loaded = _load_main(directory / name, generation)
        exact = loaded is not None
        main = loaded or main
    return main, exact


def _load_main(folder: Path, generation: int) -> _Main | None:
    try:
        meta = json.loads((folder / _META).read_text(encoding="utf-8"))
        ids = SavedIds.open(folder)
        hashes = _map_array(folder / "hashes.npy")
        lengths = _map_array(folder / "lengths.npy")
        seg = _load_segment(folder, len(ids)) if meta.get("indexed") else None
        return _Main(ids, hashes, seg, generation, lengths)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        # Derived state: rebuild from the stored texts rather than refuse to start.
        log.warning("bm25s main segment %s is unreadable (%s); rebuilding it", folder, exc)
        return None


def _load_segment(folder: Path, n_docs: int) -> _Segment:
    """Main's arrays memory-mapped, not read: a search reads only its tokens' postings, so the
    first search after opening pays for those pages alone (the files are written once, under a
    new folder per generation, and never changed in place)."""
    nonoccurrence = None
    if (folder / "nonoccurrence.npy").exists():
        nonoccurrence = _map_array(folder / "nonoccurrence.npy")
    vocab = TermTable.open(folder)
    return _Segment(
        _map_array(folder / "data.npy"),
        # Kept as saved (the smallest type that holds them): scoring casts each query token's
        # positions to intp anyway, and widening all of them here was a third of the load.
        _map_array(folder / "indices.npy"),
        _map_array(folder / "indptr.npy"),
        # A main saved before the terms table existed: its vocabulary parsed, as it always was.
        vocab if vocab is not None else json.loads((folder / "vocab.json").read_bytes()),
        n_docs,
        nonoccurrence,
    )


def _map_array(path: Path) -> np.ndarray:
    """An ``.npy`` file as a read-only array over its pages (read only where indexed)."""
    array = np.load(path, mmap_mode="r", allow_pickle=False)
    if not isinstance(array, np.memmap):
        raise ValueError(f"{path.name} holds no array")
    # A plain ndarray over the same pages: every slice of an np.memmap runs its Python-level
    # __array_finalize__, a few microseconds per query token (+7% p50 at 10k notes).
    return array.view(np.ndarray)


def _save_main(directory: Path, main: _Main, params: dict[str, Any]) -> str:
    """Write main to its generation's folder, then switch the manifest to it (atomic on
    POSIX); return the folder's name."""
    name = f"{_MAIN_PREFIX}{main.generation}"
    tmp = directory / (name + _TMP_SUFFIX)
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    if main.seg is not None:
        _save_segment(main.seg, tmp)
    _save_array(tmp / "hashes.npy", main.hashes)
    _save_array(tmp / "lengths.npy", main.lengths)
    ids = "\0".join(main.ids).encode("utf-8")
    _write_bytes(tmp / IDS, ids)
    _save_array(tmp / ENDS, id_ends(ids))
    _write_file(tmp / _META, json.dumps({"chunks": len(main.ids), "indexed": main.seg is not None}))
    final = directory / name
    shutil.rmtree(final, ignore_errors=True)
    os.replace(tmp, final)
    _write_manifest(directory, name, main.generation, params)
    return name


def _save_segment(seg: _Segment, folder: Path) -> None:
    for name in ("data", "indptr"):
        _save_array(folder / f"{name}.npy", getattr(seg, name))
    _save_array(folder / "indices.npy", _compact_positions(seg.indices, seg.n_docs))
    if seg.nonoccurrence is not None:
        _save_array(folder / "nonoccurrence.npy", seg.nonoccurrence)
    _write_file(folder / "vocab.json", json.dumps(dict(seg.vocab), ensure_ascii=False))
    save_terms(seg.vocab, folder)


def _read_manifest(directory: Path) -> dict[str, Any]:
    path = directory / _MANIFEST
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("bm25s manifest %s is unreadable (%s); rebuilding the index", path, exc)
        return {}
    return value if isinstance(value, dict) else {}


def _read_manifest_generation(directory: Path) -> int:
    try:
        return int(_read_manifest(directory).get("generation", 0))
    except (TypeError, ValueError):
        return 0


def _write_manifest(
    directory: Path, main_name: str | None, generation: int, params: dict[str, Any]
) -> None:
    manifest = {"main": main_name, "generation": generation, "params": params}
    tmp = directory / (_MANIFEST + _TMP_SUFFIX)
    _write_file(tmp, json.dumps(manifest, indent=2))
    os.replace(tmp, directory / _MANIFEST)


def _remove_stale(directory: Path, keep: str | None) -> None:
    for child in directory.iterdir():
        if child.is_dir() and child.name.startswith(_MAIN_PREFIX) and child.name != keep:
            shutil.rmtree(child, ignore_errors=True)


# -- the rows ------------------------------------------------------------------------------------


def _load_rows(db: LockedDb, main: _Main, exact: bool) -> list[tuple[str, int]]:
    """Tombstone main's chunks whose rows are gone or changed; return the delta's (id, hash).

    The rows' marks are trusted when main is ``exact`` and the rows were marked with its
    generation; otherwise every row's hash is compared with main's and the rows marked again, so
    the next load can trust the marks.
    """
    with db.read() as conn:
        marked = _get_meta(conn, _MAIN_GENERATION)
        trusted = exact and marked == main.generation
        delta = _load_marked(conn, main) if trusted else _load_compared(conn, main)
    if not trusted:
        _mark_rows(db, main)
    return delta


def _load_marked(conn: sqlite3.Connection, main: _Main) -> list[tuple[str, int]]:
    """Delta and tombstones from the rows' marks: rows marked 0 are the delta; main chunks
    with no row marked with main's generation are tombstones."""
    delta = conn.execute("SELECT id, hash FROM chunks WHERE main = 0").fetchall()
    if not main.ids:
        return delta
    # Every row is marked 0 or with main's generation (a merge marks them all in one
    # transaction, a write marks its rows with the generation of the main it wrote against, and
    # untrusted marks are rewritten before they are trusted), so the rows main still indexes are
    # all rows but the delta's: a plain count, which SQLite takes without reading the rows
    # (counting the rows marked with main's generation read every one: 2-3x the time).
    (rows,) = conn.execute("SELECT count(*) FROM chunks").fetchone()
    if rows - len(delta) != len(main.ids):
        live = {
            row[0]
            for row in conn.execute("SELECT id FROM chunks WHERE main = ?", (main.generation,))
        }
        main.set_dead(i for i, cid in enumerate(main.ids) if cid not in live)
    return delta


def _load_compared(conn: sqlite3.Connection, main: _Main) -> list[tuple[str, int]]:
    """Delta and tombstones by comparing every row's hash with main's (marks not trusted)."""
    main.set_dead(range(len(main.ids)))
    pos = main.pos
    revive: list[int] = []
    delta: list[tuple[str, int]] = []
    for cid, h in conn.execute("SELECT id, hash FROM chunks"):
        i = pos.get(cid)
        if i is not None and main.hash_of(i) == h:
            revive.append(i)
        else:
            delta.append((cid, h))
    if revive:
        main.revive(revive)
    return delta


def _mark_rows(db: LockedDb, main: _Main) -> None:
    """Mark the rows as just derived, so the next load can trust the marks again."""
    live = [(main.generation, main.ids[i]) for i in np.flatnonzero(main.alive)]
    with db.transaction() as conn:
        conn.execute("UPDATE chunks SET main = 0")
        conn.executemany("UPDATE chunks SET main = ? WHERE id = ?", live)
        _set_meta(conn, _MAIN_GENERATION, main.generation)


def _store_rows(db: LockedDb, pending: dict[str, list[Row]]) -> None:
    """Replace each path's rows with ``pending``'s, in one transaction."""
    with db.transaction() as conn:
        for path, rows in pending.items():
            # The rows of ``path`` are the ids "<path>#<ordinal>": a range of the key,
            # without the ids of a longer path that starts with "<path>#".
            conn.execute(
                "DELETE FROM chunks WHERE id > ? AND id < ? AND instr(substr(id, ?), '#') = 0",
                (path + "#", path + "$", len(path) + 2),
            )
            conn.executemany(
                "INSERT OR REPLACE INTO chunks (id, hash, main, text) VALUES (?, ?, ?, ?)",
                rows,
            )


def _stored_texts(db: LockedDb, ids: list[str]) -> tuple[dict[str, str], list[str]]:
    """The stored texts of ``ids``, and the ids whose rows store none."""
    texts: dict[str, str] = {}
    without: list[str] = []
    with db.read() as conn:
        for start in range(0, len(ids), _FETCH_BATCH):
            batch = ids[start : start + _FETCH_BATCH]
            marks = ",".join("?" * len(batch))
            sql = f"SELECT id, text FROM chunks WHERE id IN ({marks})"
            for cid, text in conn.execute(sql, batch):
                if text is None:
                    without.append(cid)
                else:
                    texts[cid] = text
    return texts, without


def _all_rows(db: LockedDb) -> list[tuple[str, int, str | None]]:
    """Every row's (id, hash, text), by id."""
    with db.read() as conn:
        return conn.execute("SELECT id, hash, text FROM chunks ORDER BY id").fetchall()


def _mark_merged(db: LockedDb, generation: int, dropped: list[tuple[str]]) -> None:
    """Mark every row with a merge's new main generation and delete the ``dropped`` ones."""
    with db.transaction() as conn:
        # No flush writes rows meanwhile: their rows are taken under the lock the merge holds.
        conn.execute("UPDATE chunks SET main = ?", (generation,))
        conn.executemany("DELETE FROM chunks WHERE id = ?", dropped)
        _set_meta(conn, _MAIN_GENERATION, generation)
    with db.read() as conn:
        # The merge emptied the delta's partial index, which held every row after a bulk
        # index: give those pages back rather than keep them as free space on disk.
        compact(conn)


def _clear_rows(db: LockedDb, generation: int) -> None:
    """Delete every row; the empty main they now agree with is of ``generation``."""
    with db.transaction() as conn:
        conn.execute("DELETE FROM chunks")
        _set_meta(conn, _MAIN_GENERATION, generation)


def _get_meta(conn: sqlite3.Connection, key: str) -> int | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    try:
        return int(row[0]) if row else None
    except ValueError:
        return None


def _set_meta(conn: sqlite3.Connection, key: str, value: int) -> None:
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, str(value)))


# -- files ---------------------------------------------------------------------------------------


def _compact_positions(indices: np.ndarray, n_docs: int) -> np.ndarray:
    """Chunk positions in the smallest unsigned type that holds them: up to 65,536 chunks, half
    the bytes of bm25s's int32 (the postings are most of the index on disk)."""
    if n_docs <= 1 << 16:
        return indices.astype(np.uint16, copy=False)
    return indices.astype(np.uint32, copy=False)


def _save_array(path: Path, array: np.ndarray) -> None:
    with open(path, "wb") as handle:
        np.save(handle, np.ascontiguousarray(array), allow_pickle=False)
        handle.flush()
        os.fsync(handle.fileno())


def _write_bytes(path: Path, data: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def _write_file(path: Path, text: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
