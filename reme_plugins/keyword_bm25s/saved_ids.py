"""Main's chunk ids as saved, read where they lie: a search decodes only its hits' ids.

``ids.txt`` holds the ids, UTF-8, separated by NUL; ``id_ends.npy`` (uint32, or int64 past 4 GiB)
where each one ends in it. Both are memory-mapped, so opening an index builds no list of 57k
strings (splitting them was most of what loading main still cost); iterating the ids (a filter
mask, a write's path lookup) builds that list once. A main saved before ``id_ends.npy`` existed
has its ends found by one scan of ``ids.txt`` for NULs.
"""

from __future__ import annotations

import mmap
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np

IDS = "ids.txt"
ENDS = "id_ends.npy"


def id_ends(raw: bytes | mmap.mmap) -> np.ndarray:
    """Where each NUL-separated id of ``raw`` ends (none for an empty ``raw``)."""
    if not len(raw):
        return np.zeros(0, dtype=np.uint32)
    nuls = np.flatnonzero(np.frombuffer(raw, dtype=np.uint8) == 0)
    dtype = np.uint32 if len(raw) < 1 << 32 else np.int64
    return np.append(nuls, len(raw)).astype(dtype)


class SavedIds(Sequence[str]):
    """The ids of ``raw`` (NUL-separated UTF-8) with their ``ends``, as a read-only sequence."""

    def __init__(self, raw: bytes | mmap.mmap, ends: np.ndarray) -> None:
        if ends.ndim != 1 or (len(ends) and int(ends[-1]) != len(raw)):
            raise ValueError(f"{len(ends)} id ends do not end at the ids' {len(raw)} bytes")
        self._raw = raw
        self._ends = ends
        # Read through a memoryview: Python ints straight from C (numpy scalars cost ~5x more).
        self._at = memoryview(np.ascontiguousarray(ends).view(np.ndarray))
        self._list: list[str] | None = None

    @classmethod
    def open(cls, folder: Path) -> SavedIds:
        """``folder``'s ids, memory-mapped."""
        with open(folder / IDS, "rb") as handle:
            empty = not handle.seek(0, 2)
            raw = b"" if empty else mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        if (folder / ENDS).exists():
            ends = np.load(folder / ENDS, mmap_mode="r", allow_pickle=False)
        else:
            ends = id_ends(raw)  # a main saved without its ends
        return cls(raw, ends)

    def __len__(self) -> int:
        return len(self._ends)

    def __getitem__(self, index: int) -> str:  # type: ignore[override]
        ids = self._list
        if ids is not None:
            return ids[index]
        if not isinstance(index, int):
            return self.as_list()[index]
        at = self._at
        if index < 0:
            index += len(at)
        if not 0 <= index < len(at):
            raise IndexError(index)
        start = at[index - 1] + 1 if index else 0
        return self._raw[start : at[index]].decode("utf-8")

    def __iter__(self) -> Iterator[str]:
        return iter(self.as_list())

    def as_list(self) -> list[str]:
        """Every id, decoded once and kept."""
        ids = self._list
        if ids is None:
            ids = self._list = (
                bytes(self._raw).decode("utf-8").split("\0") if len(self._ends) else []
            )
        return ids
