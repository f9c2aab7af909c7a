"""The onnxruntime side of the ONNX encoder (``onnx_encoder`` builds the graph): an embedding's
session and worker threads (``OnnxRunner``), the session's options (``open_session``), and the
glibc allocator settings that keep a run's freed buffers from staying resident.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from reme_core.api import EmbeddingError
from reme_plugins import native_heap

MAX_RUN_THREADS = 4
"""A run's default threads with ``intra_op`` (one per core up to this): a 150-token text's
products are too small to spread over more."""


class OnnxRunner:
    """An embedding's onnxruntime session (shared by every caller: a session's ``run`` may be
    called from several threads at once and releases the GIL) and its worker threads for
    passage batches, both made on first use and dropped by ``close``.

    By default each run has one thread and a passage batch is spread over ``threads`` workers
    (None: one per core), one text per worker in flight. With ``intra_op`` the session's runs
    have ``threads`` threads each (None: one per core, at most ``MAX_RUN_THREADS``) and the
    caller runs a batch's texts one after another: one text's activations in memory instead of
    one per core (a 360-token text's ~15 MB)."""

    def __init__(
        self,
        model_path: Callable[[], Path],
        threads: int | None,
        name: str,
        arena: bool = True,
        intra_op: bool = False,
    ):
        self._model_path = model_path
        self._threads = threads
        self._name = name
        self._arena = arena
        self.intra_op = intra_op
        self._lock = threading.Lock()
        self._session: Any = None
        self._pool: ThreadPoolExecutor | None = None

    def run_threads(self) -> int:
        """Threads of each run: ``threads`` (or its default) with ``intra_op``, else 1."""
        if not self.intra_op:
            return 1
        return self._threads or min(cores(), MAX_RUN_THREADS)

    def session(self) -> Any:
        session = self._session
        if session is not None:
            return session
        with self._lock:
            if self._session is None:
                if not self._arena:  # before loading: the model's buffers are large too
                    bound_mmap_threshold()
                self._session = open_session(
                    self._model_path(), threads=self.run_threads(), arena=self._arena
                )
                if not self._arena:  # loading the model freed more than it keeps
                    release_freed_memory()
            return self._session

    def workers(self) -> ThreadPoolExecutor:
        """``threads`` workers (None: one per core) for spreading a batch's runs."""
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    self._threads or cores(), thread_name_prefix=self._name
                )
            return self._pool

    def close(self) -> None:
        with self._lock:
            self._session = None
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)


def release_freed_memory() -> None:
    """Hand memory that is free but still held by the C allocator back to the system, where
    that allocator is glibc's (``malloc_trim``); elsewhere nothing. Without an arena each
    onnxruntime run mallocs and frees its buffers, in the thread that ran it: glibc keeps what
    each thread freed for that thread (measured: a 150-note index's peak 256 -> 238 MB)."""
    native_heap.release_freed_memory()


MMAP_THRESHOLD = 256 * 1024
"""Bytes from which glibc serves an allocation with its own memory map (``bound_mmap_threshold``)."""


def bound_mmap_threshold() -> None:
    """Fix glibc's mmap threshold at ``MMAP_THRESHOLD`` (``mallopt(M_MMAP_THRESHOLD)``) where the
    C allocator is glibc's; elsewhere nothing. glibc raises its threshold to the size of each
    mapped block freed (up to 32 MB), after which a run's activations (a 512-token text's
    attention scores are 12 MB) come from the heap, where freed memory stays resident; fixed,
    each large buffer is mapped and unmapped by its run. Smaller blocks (a query's activations,
    a keyword search's arrays) are left to the heap. Measured on the embedder alone (fresh
    processes, 96 texts of 50-400 words): peak 176-191 -> 166-167 MB, resident after 124 -> 116
    MB, a 512-token run ~4% slower, a query's run unchanged (onnxruntime 1.32, glibc 2.36)."""
    mallopt = native_heap.libc_function("mallopt")
    if mallopt is not None:
        mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)


_M_MMAP_THRESHOLD = -3  # glibc's malloc.h


def cores() -> int:
    """Cores this process may run on (its affinity, not the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on every platform
        return os.cpu_count() or 1


def open_session(path: Path, threads: int = 1, arena: bool = True) -> Any:
    """An onnxruntime CPU session on ``path`` with ``threads`` threads per run. Without
    ``arena`` each run allocates its buffers and frees them after (no memory arena, no
    memory patterns cached per input shape): less resident memory between runs."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    if not arena:
        options.enable_cpu_mem_arena = False
        options.enable_mem_pattern = False
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    if threads > 1:  # idle threads sleep rather than spin on a core another run needs
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        return ort.InferenceSession(
            str(path),
            options,
            providers=["CPUExecutionProvider"],
            # Its fused kernel was slower than LayerNormalization after Add here: e5-onnx
            # 36 -> 29 ms per 214-token text on one thread (onnxruntime 1.32).
            disabled_optimizers=["SkipLayerNormFusion"],
        )
    except Exception as exc:  # onnxruntime raises its own kinds
        raise EmbeddingError(f"could not load the ONNX model {path}: {exc}") from exc
