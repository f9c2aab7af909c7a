"""A reader-writer lock for threads: many readers at once, or one writer; waiting writers first."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class ReadWriteLock:
    """Shared holds (``read()``) or one exclusive hold (``write()``), with writer preference.

    A waiting writer stops new readers from starting, so a stream of searches cannot starve an
    index update. Holds nest within one thread: a reader may read again (granted at once even
    while a writer waits; waiting would deadlock against that writer), and a writer may write or
    read again. A reader asking to write is refused with ``RuntimeError``: two readers doing that
    would wait for each other forever.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers: dict[int, int] = {}  # thread id -> nested read holds
        self._writer: int | None = None
        self._waiting_writers = 0
        self._waiting_readers = 0

    @property
    def readers(self) -> int:
        """Threads holding the lock shared now."""
        with self._cond:
            return len(self._readers)

    @property
    def waiting_writers(self) -> int:
        """Threads waiting for the exclusive hold."""
        with self._cond:
            return self._waiting_writers

    @property
    def waiting_readers(self) -> int:
        """Threads waiting for a shared hold (behind a writer that holds or waits)."""
        with self._cond:
            return self._waiting_readers

    @property
    def writing(self) -> bool:
        """Whether a thread holds the lock exclusively now."""
        with self._cond:
            return self._writer is not None

    @contextmanager
    def read(self) -> Iterator[None]:
        """Hold the lock shared for the block."""
        me = threading.get_ident()
        if self._writer == me:  # only this thread sets or clears its own ownership
            yield
            return
        with self._cond:
            if me not in self._readers:
                self._waiting_readers += 1
                try:
                    while self._writer is not None or self._waiting_writers:
                        self._cond.wait()
                finally:
                    self._waiting_readers -= 1
            self._readers[me] = self._readers.get(me, 0) + 1
        try:
            yield
        finally:
            with self._cond:
                if self._readers[me] > 1:
                    self._readers[me] -= 1
                else:
                    del self._readers[me]
                    if not self._readers:
                        self._cond.notify_all()

    @contextmanager
    def write(self) -> Iterator[None]:
        """Hold the lock exclusively for the block (after the readers in flight finish)."""
        me = threading.get_ident()
        if self._writer == me:
            yield
            return
        with self._cond:
            if me in self._readers:
                raise RuntimeError("a thread holding the read lock cannot take the write lock")
            self._waiting_writers += 1
            try:
                while self._writer is not None or self._readers:
                    self._cond.wait()
            except BaseException:
                self._waiting_writers -= 1
                self._cond.notify_all()  # readers held back by this writer may go on
                raise
            self._waiting_writers -= 1
            self._writer = me
        try:
            yield
        finally:
            with self._cond:
                self._writer = None
                self._cond.notify_all()
