"""Keeps the vector store in step with the catalog's chunks, and answers the vector arm.

Writes through the API are embedded before they return (read-your-writes), in two steps so that
searches never wait for the model: ``prepare`` embeds new chunk texts into the embedding cache
with no lock held, then ``apply`` (inside the indexer's short exclusive section) stores the
catalog's chunks from the cache. A full pass (``reconcile``) compares what the store holds with
what the catalog has, by content hash, and embeds only the difference; unchanged chunks come
from the embedding cache. It can run in the background while search serves, and stops cleanly
between batches. ``_lock`` guards the store's contents against a batch stored half-way; it is
never held during a model call.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from reme_core.components import Embedding, FileStore, VectorRecord
from reme_core.errors import ArmUnavailable, EmbeddingError, RemeError
from reme_core.index.batch_isolation import embed_each, upsert_each
from reme_core.index.catalog import Catalog
from reme_core.index.drift import CATCH_UP
from reme_core.index.embedding_cache import EmbeddingCache
from reme_core.schema import SearchFilters
from reme_core.schema.chunk import chunk_path

Progress = Callable[[int, int], None]

VECTOR_PROBLEM = "vectors: chunk "
"""How a refused chunk's ``status`` problem starts (and how it is found to forget it)."""


class VectorIndex:
    """The embedding model, the vector store and the cache, driven from the catalog."""

    def __init__(
        self,
        embedding: Embedding,
        store: FileStore,
        cache: EmbeddingCache,
        catalog: Catalog,
        *,
        batch_size: int = 32,
        candidate_cap: int = 200,
    ):
        self.embedding = embedding
        self.store = store
        self.cache = cache
        self.catalog = catalog
        self.batch_size = batch_size
        self.candidate_cap = candidate_cap
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._rerun = False
        self.model_id: str | None = None
        self.error: str | None = None
        """Why vectors are unavailable (model or store failed to open); None when they work."""
        self.last_error: str | None = None
        """The latest failure while embedding; the work stays pending and is retried."""
        self.done = 0
        self.total = 0
        self.matched = False
        """Whether the last reconcile found the store matching the catalog, with nothing to
        embed, store or drop (and so wrote nothing)."""
        self.settled: Callable[[], bool] = lambda: False
        """Whether the store is known to match the catalog still (the runtime asks the drift
        seal, ``Indexer.vectors_settled``): a reconcile then has nothing to compare."""
        self.on_matched: Callable[[int], None] | None = None
        """Told the catalog generation a reconcile began at, when it found nothing to do."""
        self._version = 0
        self._coverage: tuple[tuple[int, int], tuple[int, int], int] | None = None
        self._text_refusals: dict[str, str] = {}
        """Content hash -> why the model refused that text alone (``_embed_missing``); the
        next store of its chunks records them as refused."""
        self._absent: set[str] = set()
        """Paths the store holds no vector of (known at a reconcile's start, each dropped when
        stored, all under ``_lock``): storing one needs no delete first. Deleting before each
        batch of a first index cost zvec ~5 MB resident over 5,800 chunks, for nothing."""

    # -- lifecycle ---------------------------------------------------------------------------

    def open(self) -> None:
        """Open the store for the model's vector space; a failure makes vectors unavailable."""
        try:
            self.model_id = self.embedding.model_id
            self.store.open(self.model_id, self.embedding.dim)
        except RemeError as exc:
            self.error = str(exc)
            return
        except Exception as exc:  # a backend's own error type must not stop the workspace opening
            self.error = f"{type(exc).__name__}: {exc}"
            return
        self.cache.forget_other_models(self.model_id)
        self.error = None

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with self._lock:
            if self.error is None:
                self.store.flush()
            self.store.close()

    def state_files(self) -> list[Path] | None:
        """What the drift check's vector comparison reads: the store's files and the embedding
        cache (its stored-marks). None when the store cannot name its files."""
        files = self.store.state_files()
        return None if files is None else [*files, self.cache.db_path]

    def clear(self) -> None:
        """Forget every stored vector (the cache keeps the embeddings themselves)."""
        if not self.available or self.model_id is None:
            return
        with self._lock:
            self.store.clear()
            self.cache.unmark(self.cache.stored(self.model_id))
            self.cache.clear_refused()  # a rebuild tries every chunk again
            self._text_refusals.clear()
            self._version += 1

    @property
    def available(self) -> bool:
        return self.error is None

    @property
    def building(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # -- keeping in step -----------------------------------------------------------------------

    def prepare(self, texts: Iterable[str]) -> bool:
        """Embed the chunk texts the cache lacks, holding no lock, so searches go on meanwhile.

        The indexer calls this before it applies a write; ``apply`` then only copies vectors from
        the cache. False, with ``last_error`` set, when the model failed: those chunks stay
        pending (retried by the next ``reconcile``) and the write goes on without them.
        """
        if not self.available:
            return False
        try:
            self._embed_missing(texts)
        except RemeError as exc:
            self.last_error = str(exc)
            return False
        return True

    def apply(self, paths: Sequence[str]) -> None:
        """Replace the vectors of ``paths`` with the catalog's current chunks, from the cache.

        Quick (no model call): the indexer runs it inside its exclusive section, right after the
        catalog changed, so a search sees the chunks and their vectors change together. Chunks
        the cache lacks (``prepare`` failed) are left pending.
        """
        if not self.available or not paths:
            return
        try:
            with self._lock:
                _, pending = self._store_paths(paths)
        except RemeError as exc:  # the note is written and keyword-indexed; retried later
            self.last_error = str(exc)
            return
        if not pending:
            self.last_error = None

    def flush(self) -> None:
        """Make the store's writes so far durable."""
        if not self.available:
            return
        try:
            with self._lock:
                self.store.flush()
        except RemeError as exc:
            self.last_error = str(exc)

    def optimize(self) -> None:
        """Let the store build its search structures (between reconcile batches)."""
        if self.available:
            with self._lock:
                self.store.optimize()

    def reconcile(self, progress: Progress | None = None) -> int:
        """Embed whatever the store lacks or holds stale; drop what the catalog no longer has.
        Nothing to compare while ``settled()`` says the store still matches the catalog.

        Returns the number of chunks (re)stored. Stops early, leaving the rest pending, when
        ``close()`` is called.
        """
        self.matched = False
        if not self.available:
            return 0
        if self.settled():
            self.matched = True
            return 0
        generation = self.catalog.generation
        try:
            refreshed = self._reconcile(progress)
        except RemeError as exc:  # the rest stays pending: the next index or write retries it
            self.last_error = str(exc)
            return 0
        self.last_error = None
        if self.matched and self.on_matched is not None:
            self.on_matched(generation)
        return refreshed

    def _reconcile(self, progress: Progress | None) -> int:
        assert self.model_id is not None
        rows = self.catalog.chunk_hashes()  # digests only: no note is read for a no-op
        want = {cid: digest for cid, _, digest in rows}
        with self._lock:
            present = self.store.ids()
            self._absent = {path for _, path, _ in rows} - {chunk_path(cid) for cid in present}
        held = {cid: h for cid, h in self.cache.stored(self.model_id).items() if cid in present}
        refused = {cid: h for cid, (h, _) in self.cache.refused(self.model_id).items()}
        stale = {
            chunk_path(cid)
            for cid, h in want.items()
            if held.get(cid) != h and refused.get(cid) != h
        }
        gone = {chunk_path(cid) for cid in present if cid not in want}
        paths = sorted(stale | gone)
        self.total = len(rows)
        self.done = self.total - sum(1 for cid in want if chunk_path(cid) in stale)
        if not paths:
            self.matched = True
            return 0  # nothing stored, nothing to flush: the store's files stay as they are
        refreshed = 0
        batch: list[str] = []
        chunks_in_batch = 0
        per_path = _count_by_path(cid for cid, _, _ in rows)
        for path in paths:
            batch.append(path)
            chunks_in_batch += per_path.get(path, 0)
            if chunks_in_batch >= self.batch_size:
                refreshed += self._refresh_batch(batch, progress)
                batch, chunks_in_batch = [], 0
                if self._stop.is_set():
                    return refreshed
        if batch:
            refreshed += self._refresh_batch(batch, progress)
        with self._lock:
            self.store.flush()
        return refreshed

    def reconcile_in_background(self) -> None:
        """Start (or re-run after the current one) a reconcile on a daemon thread."""
        if not self.available:
            return
        with self._lock:
            if self.building:
                self._rerun = True
                return
            self._thread = threading.Thread(
                target=self._background, name="reme-vectors", daemon=True
            )
            self._thread.start()

    def _background(self) -> None:
        while not self._stop.is_set():
            self._rerun = False
            self.reconcile()
            if self.last_error or not self._rerun:
                return

    def _refresh_batch(self, paths: list[str], progress: Progress | None) -> int:
        # Embed with no lock held (searches and writes go on), then store under the lock from
        # the catalog as it is then: a write racing this batch is never overwritten with stale
        # chunks, and stores its own vectors after its catalog change.
        self._embed_missing(text for _, _, text in self.catalog.chunk_rows(paths))
        with self._lock:
            count, _ = self._store_paths(paths)
        self.done += count
        if progress:
            progress(self.done, self.total)
        return count

    def _embed_missing(self, texts: Iterable[str]) -> None:
        """Put the vectors of ``texts`` the cache lacks into it (the model call; no lock held).

        When the model refuses the batch, each text is embedded alone, so one text it cannot
        take costs only its own chunks (remembered in ``_text_refusals``); when every text
        fails alone too, it is the model failing, not the texts: that error is raised and all
        stay pending (``reme_core.index.batch_isolation``).
        """
        assert self.model_id is not None
        wanted = {_content_hash(text): text for text in texts}
        if not wanted:
            return
        have = self.cache.get(self.model_id, wanted)
        missing = {h: text for h, text in wanted.items() if h not in have}
        if not missing:
            return
        done, failed = embed_each(self._embed, missing)
        self.cache.put(self.model_id, done)
        self._text_refusals.update(failed)

    def _embed(self, texts: list[str]) -> np.ndarray:
        texts_in = [self.embedding.truncate(t) for t in texts]
        return _checked(self.embedding.embed_passages(texts_in), len(texts_in), self.embedding.dim)

    def _store_paths(self, paths: Sequence[str]) -> tuple[int, int]:
        """Replace every vector of ``paths`` with the catalog's current chunks, from the cache.

        Call with ``_lock`` held. Returns (chunks stored, chunks left pending: not cached).
        """
        assert self.model_id is not None
        rows = self.catalog.chunk_hashes(paths)
        notes = self.catalog.notes(paths)
        hashes = {cid: digest for cid, _, digest in rows}
        vectors = self.cache.get(self.model_id, hashes.values())
        records = []
        for cid, path, _ in rows:
            vector = vectors.get(hashes[cid])
            if vector is None:
                continue
            note = notes.get(path)
            records.append(
                VectorRecord(
                    chunk_id=cid,
                    path=path,
                    vector=vector,
                    status=note.status if note else "active",
                    date=note.date.isoformat() if note and note.date else None,
                    tags=tuple(_with_ancestors(note.tags if note else [])),
                )
            )
        refused = {
            cid: (hashes[cid], f"the embedding model refused it: {self._text_refusals[digest]}")
            for cid, _, digest in rows
            if digest in self._text_refusals and digest not in vectors
        }
        self.cache.unmark_paths(paths)
        held = [path for path in paths if path not in self._absent]
        if held:
            self.store.delete_paths(held)
        self._absent.difference_update(paths)  # before the write: a half-done one holds some
        stored = upsert_each(self.store, records, hashes, refused)
        self.cache.mark_stored(self.model_id, {r.chunk_id: hashes[r.chunk_id] for r in stored})
        self.cache.set_refused(self.model_id, paths, refused)
        self._report_refused(paths, refused)
        self._version += 1
        return len(stored), len(rows) - len(stored) - len(refused)

    def _report_refused(self, paths: Sequence[str], refused: dict[str, tuple[str, str]]) -> None:
        """One ``status`` problem per note with refused chunks; forget it once none is."""
        by_path: dict[str, list[str]] = {}
        for cid, (_, reason) in sorted(refused.items()):
            by_path.setdefault(chunk_path(cid), []).append(f"{cid}: {reason}")
        for path, lines in by_path.items():
            more = f" (and {len(lines) - 1} more)" if len(lines) > 1 else ""
            self.catalog.set_problem(path, f"{VECTOR_PROBLEM}{lines[0]}{more}")
        # Asked once, not per path: a reconcile stores thousands of paths with no problem.
        reported = {p for p, m in self.catalog.problems().items() if m.startswith(VECTOR_PROBLEM)}
        for path in reported.intersection(paths) - by_path.keys():
            self.catalog.clear_problem(path, VECTOR_PROBLEM)

    # -- searching -----------------------------------------------------------------------------

    def rank(
        self, query: str, limit: int, allowed_ids: set[str], filters: SearchFilters
    ) -> list[tuple[str, float]]:
        """The vector arm: nearest chunks among ``allowed_ids`` (filters pushed to the store)."""
        if not self.available:
            raise ArmUnavailable(self.error or "unavailable")
        if not allowed_ids:
            return []
        try:
            vector = self.embedding.embed_query(self.embedding.truncate(query))
        except RemeError as exc:
            raise ArmUnavailable(f"embedding the query failed: {exc}") from exc
        k = limit
        while True:
            with self._lock:
                hits = self.store.search(vector, k, filters)
            kept = [(cid, score) for cid, score in hits if cid in allowed_ids]
            # The store may push down less than the catalog knows (globs, stale fields): fetch
            # more until enough pass, the store runs out, or the cap is reached.
            if len(kept) >= limit or len(hits) < k or k >= self.candidate_cap * 4:
                return kept[:limit]
            k *= 4

    def coverage(self) -> tuple[int, int]:
        """(chunks whose current content the store holds, chunks in the catalog)."""
        if self.model_id is None:
            return 0, 0
        # Comparing every chunk's digest is ~20 ms on 50k chunks: recount only after a change.
        key = (self.catalog.generation, self._version)
        if self._coverage is None or self._coverage[0] != key:
            held = self.cache.stored(self.model_id)
            refused = self.cache.refused(self.model_id)
            rows = self.catalog.chunk_hashes()
            done = sum(1 for cid, _, digest in rows if held.get(cid) == digest)
            # Refused chunks are settled, not missing: a note with one leaves the rest complete.
            left_out = sum(1 for cid, _, digest in rows if refused.get(cid, ("",))[0] == digest)
            self._coverage = (key, (done, len(rows) - left_out), left_out)
        return self._coverage[1]

    def drift(self, chunk_ids: set[str]) -> tuple[set[str], set[str]] | None:
        """(chunks recorded as stored that the store lacks, stored chunks not in ``chunk_ids``).

        Ids only. Chunks not embedded yet are not drift (``coverage`` counts them). None when
        vectors are unavailable.
        """
        if not self.available or self.model_id is None:
            return None
        with self._lock:  # the store and its stored-marks change together under it
            present = self.store.ids()
            marked = self.cache.stored(self.model_id)
        missing = {cid for cid in chunk_ids if cid in marked and cid not in present}
        return missing, present - chunk_ids

    def notes(self) -> list[str]:
        """What a search response should say about this arm (partial coverage, last failure)."""
        if not self.available:
            return []
        done, total = self.coverage()
        notes = []
        if done < total:
            notes.append(
                f"vector: {done} of {total} chunks embedded"
                + (" (embedding in the background)" if self.building else f"; {CATCH_UP}")
            )
        if self.last_error:
            notes.append(f"vector: last embedding failed: {self.last_error}")
        refused = self._refused_count()
        if refused:
            notes.append(
                f"vector: {refused} chunk(s) refused by the model or the store, found by "
                "keyword only (`reme status` lists them)"
            )
        return notes

    def _refused_count(self) -> int:
        """Chunks of the catalog left out as refused (counted with ``coverage``)."""
        self.coverage()
        return self._coverage[2] if self._coverage is not None else 0

    def status(self) -> dict[str, Any]:
        state = "unavailable" if self.error else ("building" if self.building else "ready")
        done, total = self.coverage()
        if state == "ready" and done < total:
            state = "incomplete"
        return {
            "state": state,
            "model": self.model_id,
            "store": self.store.name,
            "embedded": done,
            "total": total,
            "reason": self.error,
            "last_error": self.last_error,
            "refused": self._refused_count(),
            **{f"store_{k}": v for k, v in self.store.stats().items()},
        }


def _content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _count_by_path(chunk_ids: Iterable[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for cid in chunk_ids:
        path = chunk_path(cid)
        counts[path] = counts.get(path, 0) + 1
    return counts


def _with_ancestors(tags: Iterable[str]) -> list[str]:
    """``project/reme`` also gives ``project``, so stores match nested tags like the tag index."""
    out: dict[str, None] = {}
    for tag in tags:
        parts = str(tag).strip().lstrip("#").strip("/").casefold().split("/")
        for i in range(1, len(parts) + 1):
            out["/".join(parts[:i])] = None
    return list(out)


def _checked(vectors: np.ndarray, count: int, dim: int) -> np.ndarray:
    """Refuse model output of the wrong shape or with NaNs: it would poison the store."""
    array = np.asarray(vectors, dtype=np.float32)
    if array.shape != (count, dim):
        raise EmbeddingError(f"embedding returned shape {array.shape}, expected ({count}, {dim})")
    if not np.isfinite(array).all():
        raise EmbeddingError("embedding returned NaN or infinite values")
    return array
