"""``Bm25sKeywordIndex``: the keyword index component over the two segments and the tombstones.

A write replaces a path's chunks in memory (main's unchanged chunks stay live, the rest go to the
delta) and queues its rows for the next flush; it withdraws the published view. ``refresh()``, or
else the next search, rebuilds the delta (or merges, when due) and publishes a new view. Searches
read the view with no lock held.
"""

from __future__ import annotations

import logging
import threading
from array import array
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from reme_core.api import (
    Chunk,
    ComponentContext,
    ComponentSettings,
    KeywordIndex,
    RemeError,
    TextSource,
    chunk_path,
)
from reme_plugins.keyword_bm25s.build import (
    _CorpusIds,
    _delta_segment,
    _main_segment,
    release_memory,
)
from reme_plugins.keyword_bm25s.migration import _migrate_old_rows
from reme_plugins.keyword_bm25s.scoring import _AllowedMasks, _search_segment
from reme_plugins.keyword_bm25s.segments import _Delta, _DeltaEntry, _Main, _View
from reme_plugins.keyword_bm25s.storage import (
    _FETCH_BATCH,
    _ROWS_DB,
    FORMAT_VERSION,
    SCHEMA,
    SCHEMA_VERSION,
    Row,
    _all_rows,
    _chunk_hash,
    _clear_rows,
    _load_rows,
    _mark_merged,
    _open_main,
    _read_manifest_generation,
    _remove_stale,
    _save_main,
    _store_rows,
    _stored_texts,
    _write_manifest,
    text_hash,
)
from reme_plugins.sqlite_util import LockedDb, open_db, state_file
from reme_plugins.text_tokenize import Tokenizer

log = logging.getLogger(__name__)


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
        self._masks = _AllowedMasks()
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
            allowed = self._masks.get(main, main.ids, lambda: main.pos, allowed_ids)
            alive = view.alive if view.main_live < len(main.ids) else None
            hits += _search_segment(main.seg, main.ids, tokens, limit, alive, allowed)
        delta = view.delta
        if delta is not None and delta.seg is not None:
            allowed = self._masks.get(delta, delta.ids, lambda: delta.pos, allowed_ids)
            hits += _search_segment(delta.seg, delta.ids, tokens, limit, None, allowed)
        hits.sort(key=lambda hit: (-hit[1], hit[0]))
        return hits[:limit]

    def clear(self) -> None:
        """Drop every chunk, in memory and on disk, at once."""
        with self._lock:
            _migrate_old_rows(self.dir, self._db)
            generation = max(self._main.generation, _read_manifest_generation(self.dir)) + 1
            _clear_rows(self._db, generation)
            self._reset(_Main(generation=generation))
            _write_manifest(self.dir, None, generation, self._params())
            _remove_stale(self.dir, keep=None)
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
        text, or from the text source's (a bulk index of new notes reads no text back at all),
        a batch of texts at a time, each chunk's tokens counted into the corpus and dropped.
        Every row is then marked with the new main's generation, in one transaction.
        """
        self._write_pending()
        rows = _all_rows(self._db)
        corpus = _CorpusIds()
        ids: list[str] = []
        hashes = array("q")
        dropped: list[tuple[str]] = []
        for start in range(0, len(rows), _FETCH_BATCH):
            batch = rows[start : start + _FETCH_BATCH]
            texts = self._source_texts(
                [cid for cid, h, text in batch if text is None and not self._cached(cid, h)],
                {cid: h for cid, h, _ in batch},
            )
            for cid, h, text in batch:
                tokens = self._cached_tokens(cid, h)
                if tokens is None:
                    text = text if text is not None else texts.pop(cid, None)
                    if text is None:
                        dropped.append((cid,))
                        continue
                    tokens = self.tokenizer(text)
                corpus.add(tokens)
                ids.append(cid)
                hashes.append(h)
            del texts
        del rows
        s = self.settings
        seg = _main_segment(corpus, k1=s.k1, b=s.b, method=s.method)
        lengths = corpus.token_counts().copy()
        del corpus
        generation = self._main.generation + 1
        _mark_merged(self._db, generation, dropped)
        if dropped:
            log.warning(
                "bm25s: %d chunk(s) left out of the index: their text is gone from the text "
                "source (the drift check reports them; `reme index` repairs them)",
                len(dropped),
            )
        hashes_a = np.frombuffer(hashes, dtype=np.int64).copy()
        self._reset(_Main(ids, hashes_a, seg, generation, lengths))
        self._main_dirty = True
        release_memory()

    def _cached(self, cid: str, h: int) -> bool:
        """Whether the delta holds ``cid``'s tokens or text for this content hash."""
        entry = self._delta_entries.get(cid)
        return (
            entry is not None
            and entry.hash == h
            and (entry.tokens is not None or entry.text is not None)
        )

    def _cached_tokens(self, cid: str, h: int) -> list[str] | None:
        """``cid``'s tokens from its delta entry (tokenising the text it keeps), if it has them."""
        entry = self._delta_entries.get(cid)
        if entry is None or entry.hash != h:
            return None
        if entry.tokens is not None:
            return entry.tokens
        return None if entry.text is None else self.tokenizer(entry.text)

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
        s = self.settings
        seg = _delta_segment(self._main, corpus, vocab, n_tokens, k1=s.k1, b=s.b, method=s.method)
        self._delta = _Delta(ids, seg)
        self._delta_dirty = False
        self.delta_builds += 1

    # -- disk --------------------------------------------------------------------------------

    def _ensure_loaded(self) -> None:
        if self._loaded:
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        _migrate_old_rows(self.dir, self._db)
        main, exact = _open_main(self.dir, self._params())
        self._reset(main)
        for cid, h in _load_rows(self._db, main, exact):
            self._add_loaded_delta(cid, h)
        self._delta_dirty = bool(self._delta_entries)
        self._loaded = True

    def _add_loaded_delta(self, cid: str, h: int) -> None:
        path = chunk_path(cid)
        self._delta_entries[cid] = _DeltaEntry(path, h, None)
        self._delta_by_path.setdefault(path, []).append(cid)

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
            _store_rows(self._db, pending)
        except BaseException:
            with self._pending_lock:
                self._pending = {**pending, **self._pending}
            raise

    def _fetch_texts(self, ids: list[str]) -> dict[str, str]:
        """Texts of delta chunks loaded from disk: the stored ones, else the text source's."""
        if not ids:
            return {}  # a delta rebuilt from tokens alone does not wait for a flush's write
        texts, without = _stored_texts(self._db, ids)
        hashes = {cid: self._delta_entries[cid].hash for cid in without}
        texts.update(self._source_texts(without, hashes))
        return texts

    def _save_main(self) -> None:
        """Write main, switch the manifest to it, then remove older mains' folders."""
        name = _save_main(self.dir, self._main, self._params())
        self._main_dirty = False
        _remove_stale(self.dir, keep=name)
