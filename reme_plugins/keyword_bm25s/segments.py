"""The keyword index's in-memory state: segments, main's tombstone mask, the delta, the view.

A *segment* is one bm25s index as search reads it: its CSC score matrix and vocabulary, numpy
arrays only (scoring never imports bm25s). *Main* is the segment built at the last merge, with its
chunk ids, hashes, token counts and the mask of its live chunks (False: tombstoned, deleted or
replaced since); searches read that mask without a lock, so a write copies it before changing it.
The *delta* is the small segment over chunks written since, rebuilt from its entries' tokens. A
*view* is what one search reads, published whole and never changed after.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from reme_core.api import chunk_path

if TYPE_CHECKING:
    import bm25s


@dataclass
class _Segment:
    """One bm25s index as search reads it: the CSC score matrix (token columns) and vocabulary."""

    data: np.ndarray  # float32 score of each posting
    indices: np.ndarray  # the chunk of each posting
    indptr: np.ndarray  # token t's postings are [indptr[t], indptr[t + 1])
    vocab: Mapping[str, int]  # a dict, or main's TermTable as loaded from disk
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


@dataclass
class _Main:
    """The main segment (``seg`` None when no chunk has a token), its chunk ids, their hashes and
    token counts (for the live corpus's average chunk length)."""

    ids: Sequence[str] = field(default_factory=list)  # a list, or SavedIds as loaded
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

    def revive(self, positions: list[int]) -> None:
        """Mark many chunks live at once (loading)."""
        self._own_alive()
        self.alive[positions] = True
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


@dataclass
class _DeltaEntry:
    """A chunk written since the last merge, as the delta keeps it."""

    path: str
    hash: int
    text: str | None  # dropped once tokenized; None when loaded from disk (read back when needed)
    tokens: list[str] | None = None


@dataclass
class _Delta:
    """The delta segment as built (``seg`` None when no chunk has a token) and its chunk ids."""

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
