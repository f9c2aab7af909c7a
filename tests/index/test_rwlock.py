"""The index's reader-writer lock: shared reads, exclusive writes, writers first, nesting.

Threads are coordinated with events and the lock's own counters, never with sleeps: each wait
has a generous deadline only so that a broken lock fails the test instead of hanging it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from reme_core.index.rwlock import ReadWriteLock

DEADLINE_S = 10.0


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for: {what}")
        time.sleep(0.001)


class Holder:
    """A thread that takes the lock one way, says so, and holds it until told to let go."""

    def __init__(self, lock: ReadWriteLock, mode: str, name: str, entries: list[str]):
        self.entered = threading.Event()
        self.release = threading.Event()
        self.error: BaseException | None = None
        self._hold = lock.read if mode == "read" else lock.write
        self._name, self._entries = name, entries
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            with self._hold():
                self._entries.append(self._name)
                self.entered.set()
                assert self.release.wait(DEADLINE_S), f"{self._name} was never released"
        except BaseException as exc:
            self.error = exc

    def finish(self) -> None:
        self.release.set()
        self.thread.join(DEADLINE_S)
        assert not self.thread.is_alive(), f"{self._name} did not finish"
        assert self.error is None, self.error


class Holders:
    """Starts holders of one lock and records the order in which they entered."""

    def __init__(self, lock: ReadWriteLock):
        self.lock = lock
        self.entries: list[str] = []
        self.started: list[Holder] = []

    def __call__(self, mode: str, name: str) -> Holder:
        holder = Holder(self.lock, mode, name, self.entries)
        self.started.append(holder)
        return holder


@contextmanager
def holders(lock: ReadWriteLock) -> Iterator[Holders]:
    """Every holder still running is released at the end, even when the test failed."""
    started = Holders(lock)
    try:
        yield started
    finally:
        for holder in started.started:
            holder.release.set()
        for holder in started.started:
            holder.thread.join(DEADLINE_S)


def test_many_readers_hold_the_lock_at_once() -> None:
    lock = ReadWriteLock()
    with holders(lock) as start:
        first, second = start("read", "r1"), start("read", "r2")
        assert first.entered.wait(DEADLINE_S) and second.entered.wait(DEADLINE_S)
        assert lock.readers == 2 and not lock.writing
        first.finish()
        second.finish()
    assert lock.readers == 0


def test_a_writer_waits_for_the_readers_in_flight() -> None:
    lock = ReadWriteLock()
    with holders(lock) as start:
        reader = start("read", "reader")
        assert reader.entered.wait(DEADLINE_S)
        writer = start("write", "writer")
        wait_until(lambda: lock.waiting_writers == 1, "the writer to queue")
        assert not writer.entered.is_set() and lock.readers == 1
        reader.finish()
        assert writer.entered.wait(DEADLINE_S)
        assert lock.writing and lock.readers == 0
        writer.finish()
    assert not lock.writing


def test_new_readers_queue_behind_a_waiting_writer() -> None:
    lock = ReadWriteLock()
    with holders(lock) as start:
        first = start("read", "first reader")
        assert first.entered.wait(DEADLINE_S)
        writer = start("write", "writer")
        wait_until(lambda: lock.waiting_writers == 1, "the writer to queue")
        # Only a reader holds the lock, yet the next reader waits: the writer goes first.
        late = start("read", "late reader")
        wait_until(lambda: lock.waiting_readers == 1, "the late reader to queue")
        assert not late.entered.is_set()
        first.finish()
        assert writer.entered.wait(DEADLINE_S)
        assert not late.entered.is_set() and lock.waiting_readers == 1
        writer.finish()
        assert late.entered.wait(DEADLINE_S)
        late.finish()
        assert start.entries == ["first reader", "writer", "late reader"]


def test_a_writer_excludes_readers_and_other_writers() -> None:
    lock = ReadWriteLock()
    with holders(lock) as start:
        writer = start("write", "w1")
        assert writer.entered.wait(DEADLINE_S)
        reader, other = start("read", "r"), start("write", "w2")
        wait_until(lambda: lock.waiting_readers == 1, "the reader to queue")
        wait_until(lambda: lock.waiting_writers == 1, "the second writer to queue")
        assert not reader.entered.is_set() and not other.entered.is_set()
        writer.finish()
        # The waiting writer goes before the waiting reader.
        assert other.entered.wait(DEADLINE_S)
        assert not reader.entered.is_set()
        other.finish()
        assert reader.entered.wait(DEADLINE_S)
        reader.finish()


def test_a_reader_may_read_again_while_a_writer_waits() -> None:
    lock = ReadWriteLock()
    holding = threading.Event()
    go_on = threading.Event()
    nested: list[int] = []

    def reader() -> None:
        with lock.read():
            holding.set()
            assert go_on.wait(DEADLINE_S)
            with lock.read():  # waiting here for the queued writer would deadlock
                nested.append(lock.readers)

    with holders(lock) as start:
        thread = threading.Thread(target=reader, daemon=True)
        thread.start()
        assert holding.wait(DEADLINE_S)
        writer = start("write", "writer")
        wait_until(lambda: lock.waiting_writers == 1, "the writer to queue")
        go_on.set()
        thread.join(DEADLINE_S)
        assert not thread.is_alive() and nested == [1]
        assert writer.entered.wait(DEADLINE_S)  # the writer got the lock once the reader let go
        writer.finish()


def test_a_writer_may_write_and_read_again() -> None:
    lock = ReadWriteLock()
    with lock.write():
        with lock.write(), lock.read():
            assert lock.writing
        assert lock.writing  # still held: the inner holds were nested
    assert not lock.writing and lock.readers == 0
    with lock.read():
        assert lock.readers == 1


def test_a_reader_cannot_start_writing() -> None:
    lock = ReadWriteLock()
    with lock.read():
        with pytest.raises(RuntimeError, match="read lock"), lock.write():
            pass
        assert lock.waiting_writers == 0
    with lock.write():  # the refused attempt left nothing behind
        assert lock.writing


def test_an_exception_releases_the_hold() -> None:
    lock = ReadWriteLock()
    for hold in (lock.read, lock.write):
        with pytest.raises(ValueError), hold():
            raise ValueError("boom")
    assert lock.readers == 0 and not lock.writing
    with lock.write():
        pass
