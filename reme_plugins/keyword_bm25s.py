"""The default keyword index: BM25 over chunks with bm25s, made incremental with two segments.

bm25s builds an immutable index, so this plugin keeps:

- a *main* segment: a bm25s index over every chunk as of the last merge, with its chunk ids;
- a *delta* segment: a small bm25s index over chunks written since, rebuilt from its own tokens
  when it changed (lazily, at the next search);
- *tombstones*: main chunks deleted or replaced since.

A search scores both segments with tombstoned and filtered-out chunks masked inside the scoring
(bm25s ``weight_mask``, then top-k among the unmasked matches only), and merges by score. A merge
(``optimize()``, or automatically when the delta or the tombstones outgrow
``max(delta_merge_min, delta_merge_ratio * live main chunks)``) rebuilds main from the stored chunk
texts. While main is empty, writes only accumulate, so a bulk index of many notes builds main once,
at the first search or flush; one edited note never rebuilds main.

Scores: each segment computes BM25 with its own statistics. The delta's term weights are rescaled
to the IDF of main + delta document frequencies, so a freshly edited note competes fairly with main,
but length normalisation still uses each segment's own average chunk length, and main's IDF counts
tombstoned chunks until the next merge: scores across segments are close, not identical.

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import bm25s
import numpy as np
from bm25s.scoring import _select_idf_scorer
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

FORMAT_VERSION = 1
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
    """The main segment: a bm25s index (None when no chunk has a token) and its chunk ids."""

    ids: list[str] = field(default_factory=list)
    hashes: list[str] = field(default_factory=list)
    bm25: bm25s.BM25 | None = None
    generation: int = 0
    pos: dict[str, int] = field(init=False)
    by_path: dict[str, list[int]] = field(init=False)
    alive: np.ndarray = field(init=False)  # 1.0 live, 0.0 tombstoned: the search weight mask
    dead: int = field(init=False)

    def __post_init__(self) -> None:
        self.pos = {cid: i for i, cid in enumerate(self.ids)}
        self.by_path = {}
        for i, cid in enumerate(self.ids):
            self.by_path.setdefault(chunk_path(cid), []).append(i)
        self.alive = np.ones(len(self.ids), dtype=np.float32)
        self.dead = 0

    @property
    def live(self) -> int:
        return len(self.ids) - self.dead

    def set_alive(self, index: int, alive: bool) -> None:
        if bool(self.alive[index]) != alive:
            self.alive[index] = 1.0 if alive else 0.0
            self.dead += -1 if alive else 1


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


class Bm25sKeywordIndex(KeywordIndex):
    """BM25 keyword search over chunks (bm25s), incremental through a delta segment."""

    name: ClassVar[str] = "bm25s"

    class Settings(ComponentSettings):
        k1: float = Field(1.5, gt=0)
        b: float = Field(0.75, ge=0, le=1)
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
        self._delta_dirty = False
        self._pending: dict[str, list[Row]] = {}  # path -> rows not yet written to SQLite

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
            self._replace(path, rows)

    def delete(self, path: str) -> None:
        """Remove every chunk of ``path``."""
        with self._lock:
            self._ensure_loaded()
            self._replace(path, [])

    def search(
        self, query: str, limit: int, allowed_ids: set[str] | None = None
    ) -> list[tuple[str, float]]:
        """Return ``(chunk_id, bm25 score)`` best first, only among ``allowed_ids`` when given."""
        if limit <= 0 or (allowed_ids is not None and not allowed_ids):
            return []
        tokens = self.tokenizer(query)
        if not tokens:
            return []
        with self._lock:
            self._ensure_loaded()
            self._materialize(for_search=True)
            main = self._main
            hits: list[tuple[str, float]] = []
            if main.bm25 is not None and main.live:
                hits += _search_segment(
                    main.bm25, main.ids, main.pos, tokens, limit, main.alive, allowed_ids
                )
            delta = self._delta
            if delta is not None and delta.bm25 is not None:
                hits += _search_segment(
                    delta.bm25, delta.ids, delta.pos, tokens, limit, None, allowed_ids
                )
        hits.sort(key=lambda hit: (-hit[1], hit[0]))
        return hits[:limit]

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

    def flush(self) -> None:
        """Persist chunk texts and, when it changed, the main segment; merges first if due."""
        with self._lock:
            self._ensure_loaded()
            self._materialize(for_search=False)
            self._write_pending()
            if self._main_dirty:
                self._save_main()

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

    def close(self) -> None:
        """Flush what is pending, then release the database."""
        with self._lock:
            if self._loaded:
                self.flush()
            self._db.close()
            self._loaded = False

    # -- in-memory updates -------------------------------------------------------------------

    def _replace(self, path: str, rows: list[Row]) -> None:
        new_hash = {cid: h for cid, h, _ in rows}
        main = self._main
        for i in main.by_path.get(path, ()):
            # A main chunk stays live only while its text is unchanged (an edit back to the
            # indexed text revives it).
            main.set_alive(i, new_hash.get(main.ids[i]) == main.hashes[i])
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
        self._pending[path] = rows

    def _reset(self, main: _Main) -> None:
        self._main = main
        self._main_dirty = False
        self._delta_entries = {}
        self._delta_by_path = {}
        self._delta = None
        self._delta_dirty = False
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
        main = _Main(ids, hashes, self._build(corpus), self._main.generation)
        self._reset(main)
        self._main_dirty = True

    def _build_delta(self) -> None:
        missing = [
            cid for cid, e in self._delta_entries.items() if e.tokens is None and e.text is None
        ]
        texts = self._fetch_texts(missing)
        ids = sorted(self._delta_entries)
        corpus: list[list[str]] = []
        for cid in ids:
            entry = self._delta_entries[cid]
            if entry.tokens is None:
                text = entry.text if entry.text is not None else texts.get(cid, "")
                entry.tokens = self.tokenizer(text)
                entry.text = None
            corpus.append(entry.tokens)
        bm25 = self._build(corpus)
        if bm25 is not None:
            self._rescale_idf(bm25, len(ids))
        self._delta = _Delta(ids, bm25)
        self._delta_dirty = False

    def _build(self, corpus: list[list[str]]) -> bm25s.BM25 | None:
        if not any(corpus):
            return None  # bm25s cannot index a corpus without a single token
        s = self.settings
        bm25 = bm25s.BM25(k1=s.k1, b=s.b, method=s.method)
        bm25.index(corpus, show_progress=False)
        return bm25

    def _rescale_idf(self, delta: bm25s.BM25, n_delta: int) -> None:
        """Give the delta's terms the IDF they would have over main + delta together."""
        main = self._main.bm25
        if main is None:
            return
        idf = _select_idf_scorer(self.settings.method)
        n_total = len(self._main.ids) + n_delta
        indptr = delta.scores["indptr"]
        df = np.diff(indptr)
        main_indptr = main.scores["indptr"]
        main_vocab = main.vocab_dict
        ratio = np.ones(len(df), dtype=np.float64)
        for token, t in delta.vocab_dict.items():
            if t >= len(df) or not df[t]:
                continue
            own = idf(int(df[t]), n_delta)
            if own <= 0:
                continue  # a zero IDF (atire, robertson) carries no term weight to rescale
            m = main_vocab.get(token)
            main_df = 0
            if m is not None and m + 1 < len(main_indptr):
                main_df = int(main_indptr[m + 1] - main_indptr[m])
            ratio[t] = idf(int(df[t]) + main_df, n_total) / own
        data = delta.scores["data"]
        delta.scores["data"] = (data * np.repeat(ratio, df)).astype(data.dtype)
        if delta.nonoccurrence_array is not None:
            delta.nonoccurrence_array = (delta.nonoccurrence_array * ratio).astype(
                delta.nonoccurrence_array.dtype
            )

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
        main.alive[:] = 0.0
        main.dead = len(main.ids)
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
            return _Main(list(meta["ids"]), list(meta["hashes"]), bm25, generation)
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
        if not self._pending:
            return
        with self._db.transaction() as conn:
            for path, rows in self._pending.items():
                conn.execute("DELETE FROM chunks WHERE path = ?", (path,))
                conn.executemany(
                    "INSERT INTO chunks (id, path, hash, text) VALUES (?, ?, ?, ?)",
                    [(cid, path, h, text) for cid, h, text in rows],
                )
        self._pending = {}

    def _fetch_texts(self, ids: list[str]) -> dict[str, str]:
        texts: dict[str, str] = {}
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
        meta = {"ids": main.ids, "hashes": main.hashes, "indexed": main.bm25 is not None}
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
    pos: dict[str, int],
    tokens: Iterable[str],
    limit: int,
    alive: np.ndarray | None,
    allowed_ids: set[str] | None,
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
    if allowed_ids is not None:
        allowed = np.zeros(n_docs, dtype=np.float32)
        allowed[[pos[cid] for cid in allowed_ids if cid in pos]] = 1.0
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
