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

A search scores both segments with tombstoned and filtered-out chunks masked inside the scoring
(bm25s ``weight_mask``, then top-k among the unmasked matches only), and merges by score. A merge
(``optimize()``, or automatically when the delta or the tombstones outgrow
``max(delta_merge_min, delta_merge_ratio * live main chunks)``) rebuilds main from the stored chunk
texts. While main is empty, writes only accumulate, so a bulk index of many notes builds main once,
at the first search or flush; one edited note never rebuilds main.

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

On disk, under ``<state_dir>/bm25s/``: ``chunks.sqlite3`` (id, path, hash and text of every live
chunk, so a merge reads no notes), ``main-<generation>/`` (bm25s files plus ``ids.json``) and
``manifest.json`` naming the current main folder. Delta and tombstones are not stored: on load they
are derived by comparing main's chunk hashes with the stored texts, so whichever of the files a
crash left new or old, the loaded state is consistent.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import threading
from collections.abc import Callable, Iterable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import bm25s
import numpy as np
from bm25s.scoring import (
    _build_idf_array,
    _build_nonoccurrence_array,
    _build_scores_and_indices_for_matrix,
    _select_idf_scorer,
    _select_tfc_scorer,
)
from pydantic import Field

from reme_core import hookimpl
from reme_core.components import ComponentContext, ComponentSettings, KeywordIndex
from reme_core.errors import RemeError
from reme_core.schema import Chunk
from reme_core.schema.chunk import chunk_path
from reme_plugins.sqlite_util import LockedDb, open_db, state_file
from reme_plugins.text_tokenize import Tokenizer

# bm25s sets its own logger to DEBUG; its info messages ("the query is empty") are noise here.
logging.getLogger("bm25s").setLevel(logging.WARNING)
log = logging.getLogger(__name__)

FORMAT_VERSION = 2  # 2: main stores its chunks' token counts
SCHEMA_VERSION = 1
SCHEMA = """
CREATE TABLE IF NOT EXISTS chunks (
    id TEXT PRIMARY KEY,
    path TEXT NOT NULL,
    hash TEXT NOT NULL,
    text TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_by_path ON chunks (path);
"""
_MANIFEST = "manifest.json"
_IDS = "ids.json"
_MAIN_PREFIX = "main-"
_TMP_SUFFIX = ".tmp"
_FETCH_BATCH = 500  # SQLite's default limit on bound parameters is 999

Row = tuple[str, str, str]
"""(chunk id, content hash, text)."""


@dataclass
class _Main:
    """The main segment: a bm25s index (None when no chunk has a token), its chunk ids and their
    token counts (for the live corpus's average chunk length)."""

    ids: list[str] = field(default_factory=list)
    hashes: list[str] = field(default_factory=list)
    bm25: bm25s.BM25 | None = None
    generation: int = 0
    lengths: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    pos: dict[str, int] = field(init=False)
    by_path: dict[str, list[int]] = field(init=False)
    alive: np.ndarray = field(init=False)  # 1.0 live, 0.0 tombstoned: the search weight mask
    dead: int = field(init=False)
    live_tokens: int = field(init=False)  # the token count of the live chunks
    alive_shared: bool = field(init=False)  # a published view holds ``alive``: copy on write

    def __post_init__(self) -> None:
        self.lengths = np.asarray(self.lengths, dtype=np.int64)
        if len(self.lengths) != len(self.ids):
            raise ValueError(f"{len(self.lengths)} token counts for {len(self.ids)} chunks")
        self.pos = {cid: i for i, cid in enumerate(self.ids)}
        self.by_path = {}
        for i, cid in enumerate(self.ids):
            self.by_path.setdefault(chunk_path(cid), []).append(i)
        self.alive = np.ones(len(self.ids), dtype=np.float32)
        self.dead = 0
        self.live_tokens = int(self.lengths.sum())
        self.alive_shared = False

    @property
    def live(self) -> int:
        return len(self.ids) - self.dead

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
        self.alive[index] = 1.0 if alive else 0.0
        self.dead += -1 if alive else 1
        self.live_tokens += int(self.lengths[index]) * (1 if alive else -1)
        return True

    def kill_all(self) -> None:
        self._own_alive()
        self.alive[:] = 0.0
        self.dead = len(self.ids)
        self.live_tokens = 0

    def live_doc_freqs(self, tokens: Sequence[str]) -> np.ndarray:
        """How many live chunks contain each of ``tokens``.

        Work is proportional to those tokens' posting lists, and only when chunks are tombstoned.
        """
        out = np.zeros(len(tokens), dtype=np.int64)
        bm25 = self.bm25
        if bm25 is None or not tokens:
            return out
        indptr = bm25.scores["indptr"]
        n_vocab = len(indptr) - 1
        vocab = bm25.vocab_dict
        which: list[int] = []
        rows: list[int] = []
        for i, token in enumerate(tokens):
            t = vocab.get(token)
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
            dead = self.alive[bm25.scores["indices"][postings]] == 0.0
            owner = np.repeat(np.arange(len(rows)), counts)
            out[which] -= np.bincount(owner, weights=dead, minlength=len(rows)).astype(np.int64)
        return out


class _CorpusStatsBM25(bm25s.BM25):
    """A bm25s index scored with statistics of a larger corpus than the one it indexes.

    bm25s takes the document count, the document frequencies and the average document length from
    the corpus it indexes; the delta indexes only the chunks written since the last merge, so this
    override of ``build_index_from_ids`` (bm25s 0.3.16, numpy CSC backend) takes them from the
    live corpus instead. Index it with ``(corpus token ids, vocab)``: ``doc_freqs[t]`` is the
    live-corpus document frequency of token id ``t``.
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


@dataclass
class _DeltaEntry:
    path: str
    hash: str
    text: str | None  # dropped once tokenized; None when loaded from disk (read from SQLite)
    tokens: list[str] | None = None


@dataclass
class _Delta:
    ids: list[str]
    bm25: bm25s.BM25 | None
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
        self._db = LockedDb(lambda: open_db(self.dir / "chunks.sqlite3", SCHEMA, SCHEMA_VERSION))
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

    # -- KeywordIndex ------------------------------------------------------------------------

    def upsert(self, path: str, chunks: Sequence[Chunk]) -> None:
        """Replace every chunk of ``path``; cheap: no bm25s index is built here."""
        rows: list[Row] = []
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
            rows.append((chunk.id, chunk.content_hash, chunk.text))
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

        Searches run concurrently: each scores a published view with no lock held (bm25s scoring
        only reads the index). Only the first search after a write not followed by ``refresh()``
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
        if main.bm25 is not None and view.main_live:
            allowed = self._allowed_mask(main, main.pos, len(main.ids), allowed_ids)
            hits += _search_segment(main.bm25, main.ids, tokens, limit, view.alive, allowed)
        delta = view.delta
        if delta is not None and delta.bm25 is not None:
            allowed = self._allowed_mask(delta, delta.pos, len(delta.ids), allowed_ids)
            hits += _search_segment(delta.bm25, delta.ids, tokens, limit, None, allowed)
        hits.sort(key=lambda hit: (-hit[1], hit[0]))
        return hits[:limit]

    def _allowed_mask(
        self, segment: object, pos: dict[str, int], n_docs: int, allowed_ids: set[str] | None
    ) -> np.ndarray | None:
        """A 0/1 mask of ``allowed_ids`` over one segment, cached per (segment, set) pair.

        Callers reuse one set object per filter (the search engine caches it), and building the
        mask walks every allowed id: on 50k chunks that was most of a query's time.
        """
        if allowed_ids is None:
            return None
        for cached_segment, cached_ids, mask in self._mask_cache:
            if cached_segment is segment and cached_ids is allowed_ids:
                return mask
        mask = np.zeros(n_docs, dtype=np.float32)
        mask[[pos[cid] for cid in allowed_ids if cid in pos]] = 1.0
        # Holding the objects keeps their identities valid for the cache's lifetime. Searches
        # run this concurrently: the list is replaced, never changed, so a reader iterates a
        # whole one (a race can only drop an entry from the cache).
        self._mask_cache = [(segment, allowed_ids, mask), *self._mask_cache[:7]]
        return mask

    def clear(self) -> None:
        """Drop every chunk, in memory and on disk, at once."""
        with self._lock:
            with self._db.transaction() as conn:
                conn.execute("DELETE FROM chunks")
            generation = self._main.generation + 1
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
        """Persist chunk texts and, when it changed, the main segment; merges first if due.

        The texts are written after the lock is released, so a search that rebuilds the delta
        meanwhile does not wait for SQLite; the rows go back to pending if the write fails.
        """
        with ExitStack() as stack:
            with self._lock:
                self._ensure_loaded()
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
            live = {main.ids[i] for i in np.flatnonzero(main.alive)}
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

    def _replace(self, path: str, rows: list[Row]) -> None:
        new_hash = {cid: h for cid, h, _ in rows}
        main = self._main
        for i in main.by_path.get(path, ()):
            # A main chunk stays live only while its text is unchanged (an edit back to the
            # indexed text revives it). The delta is scored with live-corpus statistics.
            if main.set_alive(i, new_hash.get(main.ids[i]) == main.hashes[i]):
                self._delta_dirty = True
        old = {cid: self._delta_entries.pop(cid) for cid in self._delta_by_path.pop(path, [])}
        added: list[str] = []
        for cid, h, text in rows:
            i = main.pos.get(cid)
            if i is not None and main.hashes[i] == h:
                continue
            entry = old.pop(cid, None)
            if entry is None or entry.hash != h:
                entry = _DeltaEntry(path, h, text)
                self._delta_dirty = True
            self._delta_entries[cid] = entry
            added.append(cid)
        if old:
            self._delta_dirty = True
        if added:
            self._delta_by_path[path] = added
        with self._pending_lock:
            self._pending[path] = rows

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
        """Rebuild main from every live chunk text; empties delta and tombstones."""
        self._write_pending()
        ids: list[str] = []
        hashes: list[str] = []
        corpus: list[list[str]] = []
        with self._db.read() as conn:
            for cid, h, text in conn.execute("SELECT id, hash, text FROM chunks ORDER BY id"):
                ids.append(cid)
                hashes.append(h)
                corpus.append(self.tokenizer(text))
        lengths = np.fromiter((len(tokens) for tokens in corpus), np.int64, len(corpus))
        main = _Main(ids, hashes, self._build(corpus), self._main.generation, lengths)
        self._reset(main)
        self._main_dirty = True

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
        self._delta = _Delta(ids, self._build_delta_index(corpus, vocab, n_tokens))
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
        bm25 = _CorpusStatsBM25(
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
        bm25 = bm25s.BM25(k1=s.k1, b=s.b, method=s.method)
        bm25.index(corpus, show_progress=False)
        return bm25

    # -- disk --------------------------------------------------------------------------------

    def _ensure_loaded(self) -> None:
        if self._loaded:
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        manifest = self._read_manifest()
        main = _Main(generation=int(manifest.get("generation", 0)))
        name = manifest.get("main")
        if name and manifest.get("params") == self._params():
            main = self._load_main(self.dir / name, main.generation)
        self._reset(main)
        # Every main chunk starts dead; stored texts with the hash main indexed revive theirs, and
        # every other stored text is delta.
        main.kill_all()
        with self._db.read() as conn:
            for cid, path, h in conn.execute("SELECT id, path, hash FROM chunks"):
                i = main.pos.get(cid)
                if i is not None and main.hashes[i] == h:
                    main.set_alive(i, True)
                else:
                    self._delta_entries[cid] = _DeltaEntry(path, h, None)
                    self._delta_by_path.setdefault(path, []).append(cid)
        self._delta_dirty = bool(self._delta_entries)
        self._loaded = True

    def _load_main(self, folder: Path, generation: int) -> _Main:
        try:
            meta = json.loads((folder / _IDS).read_text(encoding="utf-8"))
            bm25 = None
            if meta.get("indexed"):
                bm25 = bm25s.BM25.load(folder, load_corpus=False, show_progress=False)
            lengths = np.asarray(meta["lengths"], dtype=np.int64)
            return _Main(list(meta["ids"]), list(meta["hashes"]), bm25, generation, lengths)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            # Derived state: rebuild from the stored texts rather than refuse to start.
            log.warning("bm25s main segment %s is unreadable (%s); rebuilding it", folder, exc)
            return _Main(generation=generation)

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

    def _params(self) -> dict[str, Any]:
        s = self.settings
        return {
            "format": FORMAT_VERSION,
            "tokenizer": self.tokenizer.fingerprint(),
            "bm25": {"k1": s.k1, "b": s.b, "method": s.method},
        }

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
                    conn.execute("DELETE FROM chunks WHERE path = ?", (path,))
                    conn.executemany(
                        "INSERT INTO chunks (id, path, hash, text) VALUES (?, ?, ?, ?)",
                        [(cid, path, h, text) for cid, h, text in rows],
                    )
        except BaseException:
            with self._pending_lock:
                self._pending = {**pending, **self._pending}
            raise

    def _fetch_texts(self, ids: list[str]) -> dict[str, str]:
        texts: dict[str, str] = {}
        if not ids:
            return texts  # a delta rebuilt from tokens alone does not wait for a flush's write
        with self._db.read() as conn:
            for start in range(0, len(ids), _FETCH_BATCH):
                batch = ids[start : start + _FETCH_BATCH]
                marks = ",".join("?" * len(batch))
                sql = f"SELECT id, text FROM chunks WHERE id IN ({marks})"
                texts.update(conn.execute(sql, batch).fetchall())
        return texts

    def _save_main(self) -> None:
        """Write main to a new folder, then switch the manifest to it (atomic on POSIX)."""
        main = self._main
        generation = main.generation + 1
        name = f"{_MAIN_PREFIX}{generation}"
        tmp = self.dir / (name + _TMP_SUFFIX)
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        if main.bm25 is not None:
            main.bm25.save(tmp, show_progress=False)
        meta = {
            "ids": main.ids,
            "hashes": main.hashes,
            "lengths": main.lengths.tolist(),
            "indexed": main.bm25 is not None,
        }
        _write_file(tmp / _IDS, json.dumps(meta, ensure_ascii=False))
        final = self.dir / name
        shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)
        self._write_manifest(name, generation)
        main.generation = generation
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
    bm25: bm25s.BM25,
    ids: list[str],
    tokens: Iterable[str],
    limit: int,
    alive: np.ndarray | None,
    allowed: np.ndarray | None,
) -> list[tuple[str, float]]:
    """Top ``limit`` of one segment among chunks that contain a query token and pass the masks."""
    indptr = bm25.scores["indptr"]
    indices = bm25.scores["indices"]
    n_vocab = len(indptr) - 1
    token_ids = [t for t in bm25.get_tokens_ids(list(tokens)) if t < n_vocab]
    if not token_ids:
        return []
    n_docs = int(bm25.scores["num_docs"])
    # Candidates are chunks with at least one query term (BM25L/BM25+ give every chunk a score).
    mask = np.zeros(n_docs, dtype=np.float32)
    for t in set(token_ids):
        mask[indices[indptr[t] : indptr[t + 1]]] = 1.0
    if alive is not None:
        mask *= alive
    if allowed is not None:
        mask *= allowed
    candidates = np.flatnonzero(mask)
    if candidates.size == 0:
        return []
    # The weight mask zeroes masked chunks inside bm25s; top-k is then taken among candidates only,
    # so a filtered-out chunk can never take a slot (and k never exceeds what exists).
    scores = bm25.get_scores_from_ids(token_ids, weight_mask=mask)[candidates]
    k = min(limit, candidates.size)
    top = np.argpartition(-scores, k - 1)[:k] if k < candidates.size else np.arange(k)
    return [(ids[int(candidates[i])], float(scores[i])) for i in top]


def _write_file(path: Path, text: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())


@hookimpl
def register_keyword_indexes(register: Callable[[type[KeywordIndex]], None]) -> None:
    register(Bm25sKeywordIndex)
