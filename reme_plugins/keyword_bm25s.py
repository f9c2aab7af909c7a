"""The default keyword index: BM25 over chunks with bm25s, made incremental with two segments.

bm25s builds an immutable index, so this plugin keeps:

- a *main* segment: a bm25s index over every chunk as of the last merge, with its chunk ids;
- a *delta* segment: a small bm25s index over chunks written since, rebuilt from its own tokens
  when it changed: by ``refresh()``, which the indexer calls after each write, or else lazily by
  the next search;
- *tombstones*: main chunks deleted or replaced since.

Searches read a published *view* (main, a tombstone mask that writes copy before changing, the
delta) with no lock held, so many score at once; a write withdraws the view and ``refresh()`` (or
the next search) publishes a new one.

A search scores both segments from bm25s's precomputed score matrix (a CSC matrix per segment:
the postings of each query token, summed per chunk in float32, exactly as bm25s sums them), only
over chunks that hold a query token and pass the tombstone and filter masks, then takes the top k
of those and merges the segments by score. Scoring needs numpy alone: bm25s (and scipy behind it)
is imported only to build a segment. A merge (``optimize()``, or automatically when the delta or
the tombstones outgrow ``max(delta_merge_min, delta_merge_ratio * live main chunks)``) rebuilds
main from the live chunk texts. While main is empty, writes only accumulate, so a bulk index of
many notes builds main once, at the first search or flush; one edited note never rebuilds main.

Scores: the delta is scored with the statistics a full rebuild would use, those of the live corpus
(main's live chunks plus the delta): document count, document frequencies (main's counted over its
live chunks only) and average chunk length (main keeps each chunk's token count and a running live
total, so nothing is re-tokenised). A freshly edited note therefore ranks where it would after
``optimize()``. Main keeps the statistics it was built with, tombstoned chunks included, until the
next merge; adjusting its scores per query would cost work proportional to its posting lists, and
the auto-merge threshold bounds how far they can drift (the tombstones, and the delta, stay under
``max(delta_merge_min, delta_merge_ratio * live main chunks)``), so scores across segments are
close, not identical, while many chunks are tombstoned. A change to main's live chunks (a deletion,
an edit) makes the delta rebuild from its cached tokens at the next refresh or search.

On disk, under ``<state_dir>/bm25s/``:

- ``rows.sqlite3``: one row per live chunk: id, a 60-bit content hash, which main generation
  indexes it (0: the delta), and its text, unless the indexer attached the catalog as the text
  source (``attach_text_source``): then texts are read back from the catalog when a merge or a
  reopened delta needs them (checked against the hash; a chunk whose text is gone is dropped, and
  the indexer's drift check then repairs it), so they are stored once per workspace, not twice;
- ``main-<generation>/``: main's arrays (``data``, ``indices``, ``indptr``, and bm25l/bm25+'s
  ``nonoccurrence``) and vocabulary as bm25s built them (``indices``, the chunk of each posting,
  saved as uint16 while main holds at most 65,536 chunks, uint32 beyond), its chunk ids, hashes
  and token counts;
- ``manifest.json``: the current main folder and the parameters it was built with.

Opening reads nothing; the first search (or write) loads main and derives delta and tombstones
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
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from functools import cache
from itertools import repeat
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from reme_core import hookimpl
from reme_core.components import ComponentContext, ComponentSettings, KeywordIndex, TextSource
from reme_core.errors import RemeError
from reme_core.index.sqlite_pool import compact
from reme_core.schema import Chunk
from reme_core.schema.chunk import chunk_path
from reme_plugins.sqlite_util import LockedDb, open_db, state_file
from reme_plugins.text_tokenize import Tokenizer

if TYPE_CHECKING:
    import bm25s

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
_OLD_ROWS_DB = "chunks.sqlite3"  # format 2: (id, path, hex hash, text); migrated on first load
_MAIN_GENERATION = "main_generation"
_MANIFEST = "manifest.json"
_META = "meta.json"
_IDS = "ids.txt"
_ARRAYS = ("data", "indices", "indptr", "hashes", "lengths")
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


@dataclass
class _Segment:
    """One bm25s index as search reads it: the CSC score matrix (token columns) and vocabulary."""

    data: np.ndarray  # float32 score of each posting
    indices: np.ndarray  # the chunk of each posting
    indptr: np.ndarray  # token t's postings are [indptr[t], indptr[t + 1])
    vocab: dict[str, int]
    n_docs: int
    nonoccurrence: np.ndarray | None = None  # bm25l/bm25+: every chunk's score per query token

    @classmethod
    def of(cls, bm25: bm25s.BM25) -> _Segment:
        scores = bm25.scores
        nonoccurrence = getattr(bm25, "nonoccurrence_array", None)
        return cls(
            np.asarray(scores["data"]),
            np.asarray(scores["indices"]),
            np.asarray(scores["indptr"]),
            dict(bm25.vocab_dict),
            int(scores["num_docs"]),
            None if nonoccurrence is None else np.asarray(nonoccurrence),
        )

    def token_ids(self, tokens: Iterable[str]) -> list[int]:
        """Ids of the tokens this segment has postings for, repeats kept (bm25s scores a token
        once per occurrence in the query)."""
        n_vocab = len(self.indptr) - 1
        vocab = self.vocab
        found = (vocab.get(token) for token in tokens)
        return [t for t in found if t is not None and t < n_vocab]

    def save(self, folder: Path) -> None:
        for name in ("data", "indptr"):
            _save_array(folder / f"{name}.npy", getattr(self, name))
        _save_array(folder / "indices.npy", _compact_positions(self.indices, self.n_docs))
        if self.nonoccurrence is not None:
            _save_array(folder / "nonoccurrence.npy", self.nonoccurrence)
        _write_file(folder / "vocab.json", json.dumps(self.vocab, ensure_ascii=False))

    @classmethod
    def load(cls, folder: Path, n_docs: int) -> _Segment:
        nonoccurrence = None
        if (folder / "nonoccurrence.npy").exists():
            nonoccurrence = np.load(folder / "nonoccurrence.npy", allow_pickle=False)
        return cls(
            np.load(folder / "data.npy", allow_pickle=False),
            # Saved in the smallest type that holds them; searched as bm25s built them (int32),
            # so no query pays a conversion.
            np.load(folder / "indices.npy", allow_pickle=False).astype(np.int32, copy=False),
            np.load(folder / "indptr.npy", allow_pickle=False),
            json.loads((folder / "vocab.json").read_text(encoding="utf-8")),
            n_docs,
            nonoccurrence,
        )


@dataclass
class _Main:
    """The main segment (``seg`` None when no chunk has a token), its chunk ids, their hashes and
    token counts (for the live corpus's average chunk length)."""

    ids: list[str] = field(default_factory=list)
    hashes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    seg: _Segment | None = None
    generation: int = 0
    lengths: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    alive: np.ndarray = field(init=False)  # True live, False tombstoned: the search mask
    dead: int = field(init=False)
    live_tokens: int = field(init=False)  # the token count of the live chunks
    alive_shared: bool = field(init=False)  # a published view holds ``alive``: copy on write
    _pos: dict[str, int] | None = field(init=False, default=None)
    _by_path: dict[str, list[int]] | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.hashes = np.asarray(self.hashes, dtype=np.int64)
        self.lengths = np.asarray(self.lengths, dtype=np.int64)
        if not len(self.ids) == len(self.hashes) == len(self.lengths):
            raise ValueError(
                f"{len(self.hashes)} hashes and {len(self.lengths)} token counts "
                f"for {len(self.ids)} chunks"
            )
        self.alive = np.ones(len(self.ids), dtype=bool)
        self.dead = 0
        self.live_tokens = int(self.lengths.sum())
        self.alive_shared = False

    @property
    def live(self) -> int:
        return len(self.ids) - self.dead

    @property
    def pos(self) -> dict[str, int]:
        """Chunk id -> position; built on first use (a search with filters, a write)."""
        pos = self._pos
        if pos is None:
            pos = self._pos = dict(zip(self.ids, range(len(self.ids)), strict=True))
        return pos

    @property
    def by_path(self) -> dict[str, list[int]]:
        """Path -> positions of its chunks; built on first use (a write)."""
        by_path = self._by_path
        if by_path is None:
            by_path = {}
            for i, cid in enumerate(self.ids):
                by_path.setdefault(chunk_path(cid), []).append(i)
            self._by_path = by_path
        return by_path

    def hash_of(self, index: int) -> int:
        return int(self.hashes[index])

    def share_alive(self) -> np.ndarray:
        """``alive`` for a search to read without the lock; later changes go to a copy."""
        self.alive_shared = True
        return self.alive

    def _own_alive(self) -> None:
        if self.alive_shared:
            self.alive = self.alive.copy()
            self.alive_shared = False

    def set_alive(self, index: int, alive: bool) -> bool:
        """Mark one chunk live or tombstoned; True when that changed it."""
        if bool(self.alive[index]) == alive:
            return False
        self._own_alive()
        self.alive[index] = alive
        self.dead += -1 if alive else 1
        self.live_tokens += int(self.lengths[index]) * (1 if alive else -1)
        return True

    def set_dead(self, positions: Iterable[int]) -> None:
        """Tombstone many chunks at once (loading)."""
        self._own_alive()
        self.alive[list(positions)] = False
        self.dead = int(len(self.ids) - self.alive.sum())
        self.live_tokens = int(self.lengths[self.alive].sum())

    def live_doc_freqs(self, tokens: Sequence[str]) -> np.ndarray:
        """How many live chunks contain each of ``tokens``.

        Work is proportional to those tokens' posting lists, and only when chunks are tombstoned.
        """
        out = np.zeros(len(tokens), dtype=np.int64)
        seg = self.seg
        if seg is None or not tokens:
            return out
        indptr = seg.indptr
        n_vocab = len(indptr) - 1
        which: list[int] = []
        rows: list[int] = []
        for i, token in enumerate(tokens):
            t = seg.vocab.get(token)
            if t is not None and t < n_vocab:
                which.append(i)
                rows.append(t)
        if not rows:
            return out
        rows_a = np.asarray(rows, dtype=np.int64)
        starts = np.asarray(indptr[rows_a], dtype=np.int64)
        counts = np.asarray(indptr[rows_a + 1], dtype=np.int64) - starts
        out[which] = counts
        if self.dead:
            # Every posting of these tokens, then how many of them fall on a tombstoned chunk.
            first = np.cumsum(counts) - counts
            postings = np.repeat(starts - first, counts) + np.arange(int(counts.sum()))
            dead = ~self.alive[seg.indices[postings]]
            owner = np.repeat(np.arange(len(rows)), counts)
            out[which] -= np.bincount(owner, weights=dead, minlength=len(rows)).astype(np.int64)
        return out


@cache
def _bm25s() -> Any:
    """The bm25s module, imported on first build (it imports scipy: a tenth of a second)."""
    import bm25s

    logging.getLogger("bm25s").setLevel(logging.WARNING)  # its info lines ("empty query") are noise
    return bm25s


@cache
def _corpus_stats_bm25() -> type:
    """``_CorpusStatsBM25``: defined on first use, since it subclasses bm25s's class."""
    bm25s = _bm25s()
    from bm25s.scoring import (
        _build_idf_array,
        _build_nonoccurrence_array,
        _build_scores_and_indices_for_matrix,
        _select_idf_scorer,
        _select_tfc_scorer,
    )

    class _CorpusStatsBM25(bm25s.BM25):  # type: ignore[name-defined,misc]
        """A bm25s index scored with statistics of a larger corpus than the one it indexes.

        bm25s takes the document count, the document frequencies and the average document length
        from the corpus it indexes; the delta indexes only the chunks written since the last
        merge, so this override of ``build_index_from_ids`` (bm25s 0.3.16, numpy CSC backend)
        takes them from the live corpus instead. Index it with ``(corpus token ids, vocab)``:
        ``doc_freqs[t]`` is the live-corpus document frequency of token id ``t``.
        """

        def __init__(
            self, *, doc_freqs: np.ndarray, n_docs: int, avg_doc_len: float, **kwargs: Any
        ) -> None:
            super().__init__(**kwargs)
            self.corpus_doc_freqs = doc_freqs
            self.corpus_n_docs = n_docs
            self.corpus_avg_doc_len = avg_doc_len

        def build_index_from_ids(
            self,
            unique_token_ids: list[int],
            corpus_token_ids: list[list[int]],
            show_progress: bool = True,
            leave_progress: bool = False,
        ) -> dict[str, Any]:
            n_docs = len(corpus_token_ids)
            n_vocab = len(unique_token_ids)
            own_df = {t: 0 for t in unique_token_ids}  # sizes bm25s's score arrays
            for doc in corpus_token_ids:
                for t in set(doc):
                    own_df[t] += 1
            corpus_df = {t: int(self.corpus_doc_freqs[t]) for t in unique_token_ids}
            idf_fn = _select_idf_scorer(self.idf_method)
            avg = self.corpus_avg_doc_len
            self.nonoccurrence_array = None
            if self.method in self.methods_requiring_nonoccurrence:
                self.nonoccurrence_array = _build_nonoccurrence_array(
                    doc_frequencies=corpus_df,
                    n_docs=self.corpus_n_docs,
                    compute_idf_fn=idf_fn,
                    calculate_tfc_fn=_select_tfc_scorer(self.method),
                    l_d=avg,
                    l_avg=avg,
                    k1=self.k1,
                    b=self.b,
                    delta=self.delta,
                    dtype=self.dtype,
                )
            idf_array = _build_idf_array(
                doc_frequencies=corpus_df,
                n_docs=self.corpus_n_docs,
                compute_idf_fn=idf_fn,
                dtype=self.dtype,
            )
            scores_flat, doc_idx, vocab_idx = _build_scores_and_indices_for_matrix(
                corpus_token_ids=corpus_token_ids,
                idf_array=idf_array,
                avg_doc_len=avg,
                doc_frequencies=own_df,
                k1=self.k1,
                b=self.b,
                delta=self.delta,
                show_progress=False,
                leave_progress=False,
                dtype=self.dtype,
                int_dtype=self.int_dtype,
                method=self.method,
                nonoccurrence_array=self.nonoccurrence_array,
            )
            data, indices, indptr = self._np_csc(
                data=scores_flat, rows=doc_idx, cols=vocab_idx, shape=(n_docs, n_vocab)
            )
            return {
                "data": data.astype(self.dtype),
                "indices": indices,
                "indptr": indptr,
                "num_docs": n_docs,
            }

    return _CorpusStatsBM25


@dataclass
class _DeltaEntry:
    path: str
    hash: int
    text: str | None  # dropped once tokenized; None when loaded from disk (read back when needed)
    tokens: list[str] | None = None


@dataclass
class _Delta:
    ids: list[str]
    seg: _Segment | None
    pos: dict[str, int] = field(init=False)

    def __post_init__(self) -> None:
        self.pos = {cid: i for i, cid in enumerate(self.ids)}


@dataclass(frozen=True)
class _View:
    """What a search reads, published whole under the lock and never changed after: main's index
    and ids with a tombstone mask that later writes do not touch (copy on write), and the delta."""

    main: _Main
    alive: np.ndarray
    main_live: int
    delta: _Delta | None


class Bm25sKeywordIndex(KeywordIndex):
    """BM25 keyword search over chunks (bm25s), incremental through a delta segment."""

    name: ClassVar[str] = "bm25s"

    class Settings(ComponentSettings):
        k1: float = Field(1.5, gt=0)
        b: float = Field(0.4, ge=0, le=1)
        """Length normalisation. Lower than the textbook 0.75 because chunks are already capped in
        size; measured (benchmarks/run.py planted facts, 10k notes): recall@5 0.95 at 0.75, 0.988 at
        0.4; LongMemEval_S dev50 session recall_any@1 0.766 at 0.75, 0.787 at 0.4."""
        method: Literal["lucene", "robertson", "atire", "bm25l", "bm25+"] = "lucene"
        language: str = "english"
        """Stemmer and stopword language."""
        stem: bool = True
        delta_merge_ratio: float = Field(0.1, ge=0)
        """Merge into main when the delta exceeds this share of main's live chunks..."""
        delta_merge_min: int = Field(2000, ge=0)
        """...or this many chunks, whichever is larger."""

    settings: Settings

    def __init__(
        self, settings: ComponentSettings | None = None, context: ComponentContext | None = None
    ):
        super().__init__(settings, context)
        self.dir = state_file(context, "bm25s", "the bm25s keyword index")
        self.tokenizer = Tokenizer(self.settings.language, self.settings.stem)
        self._lock = threading.RLock()
        self._db = LockedDb(lambda: open_db(self.dir / _ROWS_DB, SCHEMA, SCHEMA_VERSION))
        self._texts: TextSource | None = None  # the catalog, when the indexer attached it
        self._loaded = False
        self._main = _Main()
        self._main_dirty = False  # main changed since it was last saved
        self._delta_entries: dict[str, _DeltaEntry] = {}
        self._delta_by_path: dict[str, list[str]] = {}
        self._delta: _Delta | None = None
        self._mask_cache: list[tuple[object, set[str], np.ndarray]] = []
        self._delta_dirty = False
        self._pending: dict[str, list[Row]] = {}  # path -> rows not yet written to SQLite
        # Guards ``_pending`` alone: a flush whose write failed puts its rows back without the lock.
        self._pending_lock = threading.Lock()
        self._view: _View | None = None  # None: a write changed the state since it was published
        self.delta_builds = 0  # how many times the delta was rebuilt (tests check who pays)

    def state_files(self) -> list[Path]:
        return [self.dir]

    # -- KeywordIndex ------------------------------------------------------------------------

    def attach_text_source(self, texts: TextSource) -> None:
        """Read chunk texts back from ``texts`` (the catalog) instead of storing a copy."""
        self._texts = texts

    def upsert(self, path: str, chunks: Sequence[Chunk]) -> None:
        """Replace every chunk of ``path``; cheap: no bm25s index is built here."""
        rows: list[tuple[str, int, str]] = []
        seen: set[str] = set()
        for chunk in chunks:
            if chunk.path != path:
                raise RemeError(
                    f"keyword index: chunk {chunk.id!r} belongs to {chunk.path!r}, "
                    f"not to {path!r} being indexed"
                )
            if chunk.id in seen:
                raise RemeError(f"keyword index: chunk id {chunk.id!r} appears twice for {path!r}")
            seen.add(chunk.id)
            rows.append((chunk.id, _chunk_hash(chunk), chunk.text))
        with self._lock:
            self._ensure_loaded()
            self._view = None
            self._replace(path, rows)

    def delete(self, path: str) -> None:
        """Remove every chunk of ``path``."""
        with self._lock:
            self._ensure_loaded()
            self._view = None
            self._replace(path, [])

    def search(
        self, query: str, limit: int, allowed_ids: set[str] | None = None
    ) -> list[tuple[str, float]]:
        """Return ``(chunk_id, bm25 score)`` best first, only among ``allowed_ids`` when given.

        Searches run concurrently: each scores a published view with no lock held (scoring only
        reads the arrays). Only the first search after a write not followed by ``refresh()``
        takes the lock, to rebuild the delta.
        """
        if limit <= 0 or (allowed_ids is not None and not allowed_ids):
            return []
        tokens = self.tokenizer(query)
        if not tokens:
            return []
        view = self._view
        if view is None:
            with self._lock:
                view = self._refreshed()
        main = view.main
        hits: list[tuple[str, float]] = []
        if main.seg is not None and view.main_live:
            allowed = self._allowed_mask(main, lambda: main.pos, len(main.ids), allowed_ids)
            alive = view.alive if view.main_live < len(main.ids) else None
            hits += _search_segment(main.seg, main.ids, tokens, limit, alive, allowed)
        delta = view.delta
        if delta is not None and delta.seg is not None:
            allowed = self._allowed_mask(delta, lambda: delta.pos, len(delta.ids), allowed_ids)
            hits += _search_segment(delta.seg, delta.ids, tokens, limit, None, allowed)
        hits.sort(key=lambda hit: (-hit[1], hit[0]))
        return hits[:limit]

    def _allowed_mask(
        self,
        segment: object,
        pos: Callable[[], dict[str, int]],
        n_docs: int,
        allowed_ids: set[str] | None,
    ) -> np.ndarray | None:
        """A boolean mask of ``allowed_ids`` over one segment, cached per (segment, set) pair.

        Callers reuse one set object per filter (the search engine caches it), and building the
        mask walks every allowed id: on 50k chunks that was most of a query's time.
        """
        if allowed_ids is None:
            return None
        for cached_segment, cached_ids, mask in self._mask_cache:
            if cached_segment is segment and cached_ids is allowed_ids:
                return mask
        positions = pos()
        mask = np.zeros(n_docs + 1, dtype=bool)  # ids this segment lacks land on the extra slot
        mask[np.fromiter(map(positions.get, allowed_ids, repeat(n_docs)), np.int64)] = True
        mask = mask[:n_docs]
        # Holding the objects keeps their identities valid for the cache's lifetime. Searches
        # run this concurrently: the list is replaced, never changed, so a reader iterates a
        # whole one (a race can only drop an entry from the cache).
        self._mask_cache = [(segment, allowed_ids, mask), *self._mask_cache[:7]]
        return mask

    def clear(self) -> None:
        """Drop every chunk, in memory and on disk, at once."""
        with self._lock:
            self._migrate_old_rows()
            generation = max(self._main.generation, self._read_manifest_generation()) + 1
            with self._db.transaction() as conn:
                conn.execute("DELETE FROM chunks")
                _set_meta(conn, _MAIN_GENERATION, generation)
            self._reset(_Main(generation=generation))
            self._write_manifest(None, generation)
            self._remove_stale(keep=None)
            self._loaded = True

    def optimize(self) -> None:
        """Merge delta and tombstones into a rebuilt main segment (a no-op when there are none)."""
        with self._lock:
            self._ensure_loaded()
            if self._delta_entries or self._main.dead:
                self._merge()

    def refresh(self) -> None:
        """Rebuild the delta (or merge, when due) now, so that the next search does not."""
        with self._lock:
            self._refreshed()

    def flush(self) -> None:
        """Persist chunk rows and, when it changed, the main segment; merges first if due.

        The rows are written after the lock is released, so a search that rebuilds the delta
        meanwhile does not wait for SQLite; the rows go back to pending if the write fails.
        """
        with ExitStack() as stack:
            with self._lock:
                if not self._loaded:
                    return  # every change loads the index first: nothing is pending
                self._materialize(for_search=False)
                if self._main_dirty:
                    self._save_main()
                # The database lock is taken before ours is released: flushes write in the order
                # they took their rows, and whatever reads the table under our lock (a merge, a
                # clear) waits until this write has landed or its rows are pending again.
                stack.enter_context(self._db.read())
                pending = self._take_pending()
            self._write_rows(pending)

    def stats(self) -> dict[str, Any]:
        """Chunk counts: live total, main (all and live), delta, tombstones."""
        with self._lock:
            self._ensure_loaded()
            main = self._main
            return {
                "chunks": main.live + len(self._delta_entries),
                "main_chunks": len(main.ids),
                "main_live": main.live,
                "delta_chunks": len(self._delta_entries),
                "tombstones": main.dead,
                "unflushed_paths": len(self._pending),
            }

    def chunk_ids(self) -> set[str]:
        """Every live chunk id (main's live chunks and the delta), from memory: no disk read."""
        with self._lock:
            self._ensure_loaded()
            main = self._main
            live = (
                set(main.ids)
                if not main.dead
                else {main.ids[i] for i in np.flatnonzero(main.alive)}
            )
            return live | set(self._delta_entries)

    def close(self) -> None:
        """Flush what is pending, then release the database."""
        with self._lock:
            if self._loaded:
                self.flush()
            self._db.close()
            self._loaded = False
            self._view = None

    # -- in-memory updates -------------------------------------------------------------------

    def _replace(self, path: str, rows: list[tuple[str, int, str]]) -> None:
        new_hash = {cid: h for cid, h, _ in rows}
        main = self._main
        for i in main.by_path.get(path, ()):
            # A main chunk stays live only while its text is unchanged (an edit back to the
            # indexed text revives it). The delta is scored with live-corpus statistics.
            if main.set_alive(i, new_hash.get(main.ids[i]) == main.hash_of(i)):
                self._delta_dirty = True
        old = {cid: self._delta_entries.pop(cid) for cid in self._delta_by_path.pop(path, [])}
        added: list[str] = []
        stored: list[Row] = []
        keep_text = self._texts is None
        for cid, h, text in rows:
            i = main.pos.get(cid)
            if i is not None and main.hash_of(i) == h:
                stored.append((cid, h, main.generation, text if keep_text else None))
                continue
            entry = old.pop(cid, None)
            if entry is None or entry.hash != h:
                entry = _DeltaEntry(path, h, text)
                self._delta_dirty = True
            self._delta_entries[cid] = entry
            added.append(cid)
            stored.append((cid, h, 0, text if keep_text else None))
        if old:
            self._delta_dirty = True
        if added:
            self._delta_by_path[path] = added
        with self._pending_lock:
            self._pending[path] = stored

    def _reset(self, main: _Main) -> None:
        self._view = None
        self._main = main
        self._main_dirty = False
        self._delta_entries = {}
        self._delta_by_path = {}
        self._delta = None
        self._delta_dirty = False
        with self._pending_lock:
            self._pending = {}

    def _merge_due(self) -> bool:
        main = self._main
        if not self._delta_entries and not main.dead:
            return False
        if main.live == 0:
            # Nothing in main to keep: building it now costs what a delta would (bulk loads).
            return True
        s = self.settings
        threshold = max(s.delta_merge_min, s.delta_merge_ratio * main.live)
        return len(self._delta_entries) > threshold or main.dead > threshold

    def _materialize(self, for_search: bool) -> None:
        if self._merge_due():
            self._merge()
        elif for_search and self._delta_dirty:
            self._build_delta()

    def _refreshed(self) -> _View:
        """The current view, built first if a write changed the state (call with the lock)."""
        self._ensure_loaded()
        if self._view is None:
            self._materialize(for_search=True)
            main = self._main
            self._view = _View(main, main.share_alive(), main.live, self._delta)
        return self._view

    def _merge(self) -> None:
        """Rebuild main from every live chunk; empties delta and tombstones.

        Tokens the delta already holds are reused; other chunks are tokenised from the stored
        text, or from the text source's (a bulk index of new notes reads no text back at all).
        Every row is then marked with the new main's generation, in one transaction.
        """
        self._write_pending()
        with self._db.read() as conn:
            rows = conn.execute("SELECT id, hash, text FROM chunks ORDER BY id").fetchall()
        tokens: dict[str, list[str]] = {}
        wanted: list[str] = []
        for cid, h, text in rows:
            entry = self._delta_entries.get(cid)
            if entry is not None and entry.hash == h:
                if entry.tokens is None and entry.text is not None:
                    entry.tokens = self.tokenizer(entry.text)
                    entry.text = None
                if entry.tokens is not None:
                    tokens[cid] = entry.tokens
                    continue
            if text is not None:
                tokens[cid] = self.tokenizer(text)
            else:
                wanted.append(cid)
        hashes_of = {cid: h for cid, h, _ in rows}
        for cid, text in self._source_texts(wanted, hashes_of).items():
            tokens[cid] = self.tokenizer(text)
        kept = [(cid, h) for cid, h, _ in rows if cid in tokens]
        ids = [cid for cid, _ in kept]
        corpus = [tokens[cid] for cid in ids]
        lengths = np.fromiter((len(t) for t in corpus), np.int64, len(corpus))
        bm25 = self._build(corpus)
        generation = self._main.generation + 1
        dropped = [(cid,) for cid, _, _ in rows if cid not in tokens]
        with self._db.transaction() as conn:
            # No flush writes rows meanwhile: their rows are taken under the lock this holds.
            conn.execute("UPDATE chunks SET main = ?", (generation,))
            conn.executemany("DELETE FROM chunks WHERE id = ?", dropped)
            _set_meta(conn, _MAIN_GENERATION, generation)
        with self._db.read() as conn:
            # The merge emptied the delta's partial index, which held every row after a bulk
            # index: give those pages back rather than keep them as free space on disk.
            compact(conn)
        if dropped:
            log.warning(
                "bm25s: %d chunk(s) left out of the index: their text is gone from the text "
                "source (the drift check reports them; `reme index` repairs them)",
                len(dropped),
            )
        seg = None if bm25 is None else _Segment.of(bm25)
        hashes = np.fromiter((h for _, h in kept), np.int64, len(kept))
        self._reset(_Main(ids, hashes, seg, generation, lengths))
        self._main_dirty = True

    def _source_texts(self, ids: list[str], hashes: Mapping[str, int]) -> dict[str, str]:
        """Texts of ``ids`` from the text source, only those still matching their row's hash."""
        if not ids or self._texts is None:
            return {}
        found: dict[str, str] = {}
        for start in range(0, len(ids), _FETCH_BATCH):
            batch = ids[start : start + _FETCH_BATCH]
            for cid, text in self._texts(batch).items():
                if hashes.get(cid) == text_hash(text):
                    found[cid] = text
        return found

    def _build_delta(self) -> None:
        missing = [
            cid for cid, e in self._delta_entries.items() if e.tokens is None and e.text is None
        ]
        texts = self._fetch_texts(missing)
        ids = sorted(self._delta_entries)
        vocab: dict[str, int] = {}
        corpus: list[list[int]] = []
        n_tokens = 0
        for cid in ids:
            entry = self._delta_entries[cid]
            if entry.tokens is None:
                text = entry.text if entry.text is not None else texts.get(cid, "")
                entry.tokens = self.tokenizer(text)
                entry.text = None
            corpus.append([vocab.setdefault(token, len(vocab)) for token in entry.tokens])
            n_tokens += len(entry.tokens)
        bm25 = self._build_delta_index(corpus, vocab, n_tokens)
        self._delta = _Delta(ids, None if bm25 is None else _Segment.of(bm25))
        self._delta_dirty = False
        self.delta_builds += 1

    def _build_delta_index(
        self, corpus: list[list[int]], vocab: dict[str, int], n_tokens: int
    ) -> bm25s.BM25 | None:
        """Index the delta with the live corpus's statistics: main's live chunks plus the delta."""
        if not vocab:
            return None  # bm25s cannot index a corpus without a single token
        main = self._main
        doc_freqs = main.live_doc_freqs(list(vocab))
        for doc in corpus:
            doc_freqs[list(set(doc))] += 1
        n_docs = main.live + len(corpus)
        s = self.settings
        bm25 = _corpus_stats_bm25()(
            doc_freqs=doc_freqs,
            n_docs=n_docs,
            avg_doc_len=(main.live_tokens + n_tokens) / n_docs,
            k1=s.k1,
            b=s.b,
            method=s.method,
        )
        bm25.index((corpus, vocab), show_progress=False)
        return bm25

    def _build(self, corpus: list[list[str]]) -> bm25s.BM25 | None:
        if not any(corpus):
            return None  # bm25s cannot index a corpus without a single token
        s = self.settings
        bm25 = _bm25s().BM25(k1=s.k1, b=s.b, method=s.method)
        bm25.index(corpus, show_progress=False)
        return bm25

    # -- disk --------------------------------------------------------------------------------

    def _ensure_loaded(self) -> None:
        if self._loaded:
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        self._migrate_old_rows()
        manifest = self._read_manifest()
        generation = int(manifest.get("generation", 0))
        main = _Main(generation=generation)
        name = manifest.get("main")
        exact = manifest.get("params") == self._params() or not name  # main is what it says
        if name and exact:
            loaded = self._load_main(self.dir / name, generation)
            exact = loaded is not None
            main = loaded or main
        self._reset(main)
        with self._db.read() as conn:
            marked = _get_meta(conn, _MAIN_GENERATION)
            if exact and marked == generation:
                self._load_marked(conn, main)
            else:
                self._load_compared(conn, main)
        if not (exact and marked == generation):
            self._mark_rows(main)
        self._delta_dirty = bool(self._delta_entries)
        self._loaded = True

    def _load_marked(self, conn: sqlite3.Connection, main: _Main) -> None:
        """Delta and tombstones from the rows' marks: rows marked 0 are the delta; main chunks
        with no row marked with main's generation are tombstones."""
        for cid, h in conn.execute("SELECT id, hash FROM chunks WHERE main = 0"):
            self._add_loaded_delta(cid, h)
        if not main.ids:
            return
        (in_main,) = conn.execute(
            "SELECT count(*) FROM chunks WHERE main = ?", (main.generation,)
        ).fetchone()
        if in_main != len(main.ids):
            live = {
                row[0]
                for row in conn.execute("SELECT id FROM chunks WHERE main = ?", (main.generation,))
            }
            main.set_dead(i for i, cid in enumerate(main.ids) if cid not in live)

    def _load_compared(self, conn: sqlite3.Connection, main: _Main) -> None:
        """Delta and tombstones by comparing every row's hash with main's (marks not trusted)."""
        main.set_dead(range(len(main.ids)))
        pos = main.pos
        revive: list[int] = []
        for cid, h in conn.execute("SELECT id, hash FROM chunks"):
            i = pos.get(cid)
            if i is not None and main.hash_of(i) == h:
                revive.append(i)
            else:
                self._add_loaded_delta(cid, h)
        if revive:
            main._own_alive()
            main.alive[revive] = True
            main.dead = int(len(main.ids) - main.alive.sum())
            main.live_tokens = int(main.lengths[main.alive].sum())

    def _add_loaded_delta(self, cid: str, h: int) -> None:
        path = chunk_path(cid)
        self._delta_entries[cid] = _DeltaEntry(path, h, None)
        self._delta_by_path.setdefault(path, []).append(cid)

    def _mark_rows(self, main: _Main) -> None:
        """Mark the rows as just derived, so the next load can trust the marks again."""
        live = [(main.generation, main.ids[i]) for i in np.flatnonzero(main.alive)]
        with self._db.transaction() as conn:
            conn.execute("UPDATE chunks SET main = 0")
            conn.executemany("UPDATE chunks SET main = ? WHERE id = ?", live)
            _set_meta(conn, _MAIN_GENERATION, main.generation)

    def _load_main(self, folder: Path, generation: int) -> _Main | None:
        try:
            meta = json.loads((folder / _META).read_text(encoding="utf-8"))
            ids_text = (folder / _IDS).read_text(encoding="utf-8")
            ids = ids_text.split("\0") if ids_text else []
            hashes = np.load(folder / "hashes.npy", allow_pickle=False)
            lengths = np.load(folder / "lengths.npy", allow_pickle=False)
            seg = _Segment.load(folder, len(ids)) if meta.get("indexed") else None
            return _Main(ids, hashes, seg, generation, lengths)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            # Derived state: rebuild from the stored texts rather than refuse to start.
            log.warning("bm25s main segment %s is unreadable (%s); rebuilding it", folder, exc)
            return None

    def _read_manifest(self) -> dict[str, Any]:
        path = self.dir / _MANIFEST
        try:
            value = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning("bm25s manifest %s is unreadable (%s); rebuilding the index", path, exc)
            return {}
        return value if isinstance(value, dict) else {}

    def _read_manifest_generation(self) -> int:
        try:
            return int(self._read_manifest().get("generation", 0))
        except (TypeError, ValueError):
            return 0

    def _params(self) -> dict[str, Any]:
        s = self.settings
        return {
            "format": FORMAT_VERSION,
            "tokenizer": self.tokenizer.fingerprint(),
            "bm25": {"k1": s.k1, "b": s.b, "method": s.method},
        }

    def _migrate_old_rows(self) -> None:
        """Move the rows of a format-2 ``chunks.sqlite3`` (hex hashes, a path column) into
        ``rows.sqlite3`` once, as delta: the next merge rebuilds main from their texts."""
        old = self.dir / _OLD_ROWS_DB
        if not old.exists():
            return
        try:
            with sqlite3.connect(old) as conn:
                rows = conn.execute("SELECT id, hash, text FROM chunks").fetchall()
        except sqlite3.DatabaseError as exc:
            log.warning("bm25s: cannot read %s (%s); its chunks are indexed again", old, exc)
            rows = []
        with self._db.transaction() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO chunks (id, hash, main, text) VALUES (?, ?, 0, ?)",
                [(cid, _hex_hash(h), text) for cid, h, text in rows],
            )
        for suffix in ("", "-wal", "-shm"):
            Path(f"{old}{suffix}").unlink(missing_ok=True)

    def _write_pending(self) -> None:
        """Write the pending rows now (call with the lock), after any flush still writing."""
        with self._db.read():
            self._write_rows(self._take_pending())

    def _take_pending(self) -> dict[str, list[Row]]:
        with self._pending_lock:
            pending, self._pending = self._pending, {}
        return pending

    def _write_rows(self, pending: dict[str, list[Row]]) -> None:
        """Write taken rows in one transaction; on failure they are pending again, unless a newer
        write of the same path is."""
        if not pending:
            return
        try:
            with self._db.transaction() as conn:
                for path, rows in pending.items():
                    # The rows of ``path`` are the ids "<path>#<ordinal>": a range of the key,
                    # without the ids of a longer path that starts with "<path>#".
                    conn.execute(
                        "DELETE FROM chunks WHERE id > ? AND id < ? "
                        "AND instr(substr(id, ?), '#') = 0",
                        (path + "#", path + "$", len(path) + 2),
                    )
                    conn.executemany(
                        "INSERT OR REPLACE INTO chunks (id, hash, main, text) VALUES (?, ?, ?, ?)",
                        rows,
                    )
        except BaseException:
            with self._pending_lock:
                self._pending = {**pending, **self._pending}
            raise

    def _fetch_texts(self, ids: list[str]) -> dict[str, str]:
        """Texts of delta chunks loaded from disk: the stored ones, else the text source's."""
        texts: dict[str, str] = {}
        if not ids:
            return texts  # a delta rebuilt from tokens alone does not wait for a flush's write
        without: list[str] = []
        with self._db.read() as conn:
            for start in range(0, len(ids), _FETCH_BATCH):
                batch = ids[start : start + _FETCH_BATCH]
                marks = ",".join("?" * len(batch))
                sql = f"SELECT id, text FROM chunks WHERE id IN ({marks})"
                for cid, text in conn.execute(sql, batch):
                    if text is None:
                        without.append(cid)
                    else:
                        texts[cid] = text
        hashes = {cid: self._delta_entries[cid].hash for cid in without}
        texts.update(self._source_texts(without, hashes))
        return texts

    def _save_main(self) -> None:
        """Write main to its generation's folder, then switch the manifest to it (atomic on
        POSIX)."""
        main = self._main
        name = f"{_MAIN_PREFIX}{main.generation}"
        tmp = self.dir / (name + _TMP_SUFFIX)
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        if main.seg is not None:
            main.seg.save(tmp)
        _save_array(tmp / "hashes.npy", main.hashes)
        _save_array(tmp / "lengths.npy", main.lengths)
        _write_file(tmp / _IDS, "\0".join(main.ids))
        _write_file(
            tmp / _META, json.dumps({"chunks": len(main.ids), "indexed": main.seg is not None})
        )
        final = self.dir / name
        shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)
        self._write_manifest(name, main.generation)
        self._main_dirty = False
        self._remove_stale(keep=name)

    def _write_manifest(self, main_name: str | None, generation: int) -> None:
        manifest = {"main": main_name, "generation": generation, "params": self._params()}
        tmp = self.dir / (_MANIFEST + _TMP_SUFFIX)
        _write_file(tmp, json.dumps(manifest, indent=2))
        os.replace(tmp, self.dir / _MANIFEST)

    def _remove_stale(self, keep: str | None) -> None:
        for child in self.dir.iterdir():
            if child.is_dir() and child.name.startswith(_MAIN_PREFIX) and child.name != keep:
                shutil.rmtree(child, ignore_errors=True)


def _search_segment(
    seg: _Segment,
    ids: list[str],
    tokens: Iterable[str],
    limit: int,
    alive: np.ndarray | None,
    allowed: np.ndarray | None,
) -> list[tuple[str, float]]:
    """Top ``limit`` of one segment among chunks that contain a query token and pass the masks.

    Scores are bm25s's (``BM25.get_scores_from_ids``): each query token's postings added in
    float32, token by token, plus bm25l/bm25+'s per-token baseline; only the chunks that can be
    returned are then looked at, so a filtered-out chunk never takes a slot.
    """
    token_ids = seg.token_ids(tokens)
    if not token_ids:
        return []
    data, indices, indptr = seg.data, seg.indices, seg.indptr
    scores = np.zeros(seg.n_docs, dtype=data.dtype)
    present = np.zeros(seg.n_docs, dtype=bool)
    for t in token_ids:
        start, end = int(indptr[t]), int(indptr[t + 1])
        docs = indices[start:end]
        scores[docs] += data[start:end]  # a chunk appears once per token: no repeated index
        present[docs] = True
    if alive is not None:
        present &= alive
    if allowed is not None:
        present &= allowed
    candidates = np.flatnonzero(present)
    if candidates.size == 0:
        return []
    k = min(limit, candidates.size)
    if candidates.size > _PRUNE_ABOVE and k < candidates.size:
        candidates = _pruned(seg, token_ids, scores, present, candidates, k)
    found = scores[candidates]
    if seg.nonoccurrence is not None:
        found += seg.nonoccurrence[token_ids].sum()  # the same for every chunk: order kept
    top = np.argpartition(-found, k - 1)[:k] if k < candidates.size else np.arange(k)
    return [(ids[int(candidates[i])], float(found[i])) for i in top]


_PRUNE_ABOVE = 4096
"""Candidates above which the top k is chosen from a pruned set: a query with a common word
("review" is in half the chunks) made the selection over every candidate its slowest part."""


def _pruned(
    seg: _Segment,
    token_ids: list[int],
    scores: np.ndarray,
    present: np.ndarray,
    candidates: np.ndarray,
    k: int,
) -> np.ndarray:
    """The candidates that can still be in the top ``k``: those scoring at least the k-th best
    score among the chunks of the query's rarer tokens (a subset of the candidates, so that
    score is at most the true k-th best: nothing of the true top k is dropped, ties included)."""
    indptr, indices = seg.indptr, seg.indices
    lists = sorted((int(indptr[t + 1] - indptr[t]), t) for t in set(token_ids))
    budget = max(candidates.size // 4, k)
    parts: list[np.ndarray] = []
    taken = 0
    for length, t in lists:
        if parts and taken + length > budget:
            break
        parts.append(indices[int(indptr[t]) : int(indptr[t + 1])])
        taken += length
    seeds = np.unique(np.concatenate(parts))
    seeds = seeds[present[seeds]]
    if seeds.size < k:
        return candidates
    seed_scores = scores[seeds]
    threshold = np.partition(seed_scores, seed_scores.size - k)[seed_scores.size - k]
    return candidates[scores[candidates] >= threshold]


def _hex_hash(value: object) -> int:
    try:
        return int(str(value)[:15], 16)
    except ValueError:
        return -1  # no hash at all: never equal to a chunk's, so the chunk is indexed again


def _get_meta(conn: sqlite3.Connection, key: str) -> int | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    try:
        return int(row[0]) if row else None
    except ValueError:
        return None


def _set_meta(conn: sqlite3.Connection, key: str, value: int) -> None:
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, str(value)))


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


def _write_file(path: Path, text: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())


@hookimpl
def register_keyword_indexes(register: Callable[[type[KeywordIndex]], None]) -> None:
    register(Bm25sKeywordIndex)
