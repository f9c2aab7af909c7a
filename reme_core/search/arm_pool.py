"""The threads a search runs its other arms in, beside the calling thread, shared by every
``Searcher`` in the process.

A search used to start a ``ThreadPoolExecutor`` of its own: a new thread per arm on every query
(measured at 1,000 notes: 0.5-5 ms of each hybrid search, more on a loaded machine), to overlap
a keyword arm that takes 0.1-2 ms. Now the first arm runs in the caller and the others in these
long-lived threads. The pool is bounded (``ThreadPoolExecutor``'s default, cores + 4, at most
32): the arms are CPU work, so more concurrent searches than that queue here instead of
contending for the cores. An arm never submits to the pool itself, so a full pool cannot block
its own work.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

_pools: list[ThreadPoolExecutor] = []
_lock = threading.Lock()


def arm_pool() -> ThreadPoolExecutor:
    """The shared pool, made on first use."""
    with _lock:
        if not _pools:
            _pools.append(ThreadPoolExecutor(thread_name_prefix="reme-arm"))
        return _pools[0]


def _forget_after_fork() -> None:
    # A forked child has none of the parent's threads: a pool it inherited would take work and
    # never run it. The child makes its own on first use.
    global _lock
    _lock = threading.Lock()
    _pools.clear()


if hasattr(os, "register_at_fork"):  # not on Windows
    os.register_at_fork(after_in_child=_forget_after_fork)
