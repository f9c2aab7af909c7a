"""Main's vocabulary as a table searched on disk, so that opening an index parses no vocabulary.

``vocab.json`` (token -> id) is what bm25s keeps; parsing it into a dict cost a first search
~45 ms per 100,000 tokens. Beside it main's folder holds the same vocabulary as a table that is
memory-mapped and searched where it lies:

- ``terms.npy``: uint32, shape (3, n): each token's CRC-32 (rows sorted by it, then by the
  token's bytes), its id, and the end of its bytes in ``terms.bin`` (the start is the previous
  row's end);
- ``terms.bin``: the tokens' UTF-8 bytes, one after another in the table's order.

A lookup is a binary search of the CRC row, then a comparison of the bytes of the (nearly always
one) row with that CRC: a couple of microseconds, no per-token Python object. A main saved without
the table (before it existed) is read from ``vocab.json`` into a dict, as before.
"""

from __future__ import annotations

import mmap
import os
import zlib
from bisect import bisect_left
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np

TABLE = "terms.npy"
TEXT = "terms.bin"
_MEMO_SIZE = 1 << 14  # tokens remembered per table (about 1.5 MB at most)
_UNSEEN = object()


def save_terms(vocab: Mapping[str, int], folder: Path) -> None:
    """Write ``vocab`` as the table (``terms.npy``, ``terms.bin``) into ``folder``."""
    encoded = []
    for token, i in vocab.items():
        key = token.encode("utf-8")
        encoded.append((zlib.crc32(key), key, i))
    encoded.sort()
    table = np.zeros((3, len(encoded)), dtype=np.uint32)
    if encoded:
        table[0] = [crc for crc, _, _ in encoded]
        table[1] = [i for _, _, i in encoded]
        table[2] = np.cumsum([len(b) for _, b, _ in encoded])
    with open(folder / TABLE, "wb") as handle:
        np.save(handle, table, allow_pickle=False)
        _sync(handle)
    with open(folder / TEXT, "wb") as handle:
        handle.write(b"".join(b for _, b, _ in encoded))
        _sync(handle)


def _sync(handle) -> None:  # type: ignore[no-untyped-def]
    handle.flush()
    os.fsync(handle.fileno())


class TermTable(Mapping[str, int]):
    """The table as a read-only ``token -> id`` mapping (``get`` is what scoring uses)."""

    def __init__(self, table: np.ndarray, text: bytes | mmap.mmap) -> None:
        if table.ndim != 2 or table.shape[0] != 3:
            raise ValueError(f"terms table has shape {table.shape}, not (3, n)")
        self._n = int(table.shape[1])
        if self._n and int(table[2, -1]) != len(text):
            raise ValueError(f"terms table ends at {int(table[2, -1])}, its text has {len(text)}")
        self._table = table  # held: the views below point into it
        # memoryviews: bisect and indexing read them from C and give Python ints.
        self._crcs = memoryview(np.ascontiguousarray(table[0]))
        self._ids = memoryview(np.ascontiguousarray(table[1]))
        self._ends = memoryview(np.ascontiguousarray(table[2]))
        self._text = text
        # The tokens looked up lately (query words recur): a dict's speed for them, ~30x a lookup.
        self._memo: dict[str, int | None] = {}

    @classmethod
    def open(cls, folder: Path) -> TermTable | None:
        """The table saved in ``folder``, memory-mapped; None when it has none (an older main)."""
        if not (folder / TABLE).exists():
            return None
        table = np.load(folder / TABLE, mmap_mode="r", allow_pickle=False)
        if table.dtype != np.uint32:
            raise ValueError(f"terms table is {table.dtype}, not uint32")
        with open(folder / TEXT, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            text = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        return cls(table, text)

    def get(self, token: str, default: int | None = None) -> int | None:  # type: ignore[override]
        found = self._memo.get(token, _UNSEEN)
        if found is _UNSEEN:
            found = self._lookup(token)
            memo = self._memo
            if len(memo) >= _MEMO_SIZE:
                memo = self._memo = {}  # replaced, never cleared: a concurrent reader keeps its own
            memo[token] = found
        return default if found is None else found  # type: ignore[return-value]

    def _lookup(self, token: str) -> int | None:
        key = token.encode("utf-8")
        crc = zlib.crc32(key)
        crcs, ends, text = self._crcs, self._ends, self._text
        row = bisect_left(crcs, crc)
        while row < self._n and crcs[row] == crc:
            start = ends[row - 1] if row else 0
            if text[start : ends[row]] == key:
                return self._ids[row]
            row += 1
        return None

    def __getitem__(self, token: str) -> int:
        found = self.get(token)
        if found is None:
            raise KeyError(token)
        return found

    def __contains__(self, token: object) -> bool:
        return isinstance(token, str) and self.get(token) is not None

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[str]:
        """Tokens in id order, as ``vocab.json`` lists them (decodes every token: not for search)."""
        order = np.argsort(np.asarray(self._ids, dtype=np.int64), kind="stable")
        ends = self._ends
        for row in order.tolist():
            start = ends[row - 1] if row else 0
            yield bytes(self._text[start : ends[row]]).decode("utf-8")
