"""Runs a benchmark's items in parallel processes, resumably, with a progress bar.

    rows = run_items(items, functools.partial(score_item, mode="raw"), out_dir=out,
                     item_id=lambda item: item["question_id"])

Each item's row is written to ``out_dir/items/<id>.json`` as soon as it finishes; a rerun with
the same ``out_dir`` skips items whose row is there without an ``error`` (failed items are
retried). One failing item is recorded (``error``, ``traceback``) and the run goes on.

``worker_fn(item) -> dict`` must be picklable: a top-level function, or a ``functools.partial``
of one whose bound arguments pickle (paths, strings, dicts; not an open ``Reme``). Workers are
fresh processes (``spawn``: no forked model or database handles), so a worker builds what it
needs itself, e.g. ``load_plugins()``; plugins registered only in the parent are not there.
``workers=1`` runs in this process, without a pool (debugging, tests).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any

from reme_core.bench.results import write_json

ITEMS_DIR = "items"
WorkerFn = Callable[[Any], dict[str, Any]]


def default_item_id(item: Any) -> str:
    """``item["id"]`` for a mapping, else ``item.id``."""
    return str(item["id"] if isinstance(item, dict) else item.id)


def select_items(
    items: Iterable[Any],
    *,
    item_id: Callable[[Any], str] = default_item_id,
    limit: int | None = None,
    ids: Sequence[str] | None = None,
) -> list[Any]:
    """The items ``ids`` names (in the data's order), then the first ``limit`` of them.

    An id in ``ids`` that is not in the data is a ``ValueError`` (a typo would otherwise give an
    empty, successful run).
    """
    chosen = list(items)
    if ids:
        wanted = set(ids)
        chosen = [item for item in chosen if item_id(item) in wanted]
        missing = wanted - {item_id(item) for item in chosen}
        if missing:
            raise ValueError(f"ids not in the data: {', '.join(sorted(missing))}")
    if limit is not None:
        chosen = chosen[: max(limit, 0)]
    return chosen


def run_items(
    items: Iterable[Any],
    worker_fn: WorkerFn,
    *,
    out_dir: str | Path,
    workers: int | None = None,
    limit: int | None = None,
    ids: Sequence[str] | None = None,
    item_id: Callable[[Any], str] = default_item_id,
    progress: bool = True,
    desc: str = "items",
) -> list[dict[str, Any]]:
    """Score every selected item once; return their rows in the data's order.

    ``workers`` defaults to the CPU count. Each row is what ``worker_fn`` returned plus ``id``,
    ``seconds`` and ``error`` (None, or ``"Type: message"`` with a ``traceback`` key).
    """
    chosen = select_items(items, item_id=item_id, limit=limit, ids=ids)
    folder = Path(out_dir) / ITEMS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    rows: dict[str, dict[str, Any]] = {}
    todo: list[tuple[str, Any]] = []
    for item in chosen:
        key = item_id(item)
        done = _finished(folder, key)
        if done is not None:
            rows[key] = done
        else:
            todo.append((key, item))
    bar = _bar(len(chosen), len(rows), desc, progress)
    try:
        workers = max(1, workers or os.cpu_count() or 1)
        if workers == 1 or len(todo) <= 1:
            for key, item in todo:
                rows[key] = _store(folder, key, _call(worker_fn, key, item))
                bar.update(1)
        else:
            rows.update(_parallel(worker_fn, todo, folder, min(workers, len(todo)), bar))
    finally:
        bar.close()
    return [rows[item_id(item)] for item in chosen]


def item_path(out_dir: str | Path, key: str) -> Path:
    """Where ``key``'s row is kept: ``out_dir/items/<key, made filename-safe>.json``."""
    return Path(out_dir) / ITEMS_DIR / f"{_safe(key)}.json"


# -- internals ---------------------------------------------------------------------------------


def _parallel(
    worker_fn: WorkerFn, todo: list[tuple[str, Any]], folder: Path, workers: int, bar: Any
) -> dict[str, dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        pending: dict[Future[dict[str, Any]], str] = {
            pool.submit(_call, worker_fn, key, item): key for key, item in todo
        }
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                key = pending.pop(future)
                try:
                    row = future.result()
                except Exception as exc:  # the worker process died, or the row did not pickle
                    row = _failure(key, exc, 0.0)
                rows[key] = _store(folder, key, row)
                bar.update(1)
    return rows


def _call(worker_fn: WorkerFn, key: str, item: Any) -> dict[str, Any]:
    started = time.perf_counter()
    try:
        row = dict(worker_fn(item))
    except Exception as exc:
        return _failure(key, exc, time.perf_counter() - started)
    row["id"] = key
    row.setdefault("seconds", time.perf_counter() - started)
    row.setdefault("error", None)
    return row


def _failure(key: str, exc: BaseException, seconds: float) -> dict[str, Any]:
    return {
        "id": key,
        "error": f"{type(exc).__name__}: {exc}",
        "traceback": "".join(traceback.format_exception(exc)),
        "seconds": seconds,
    }


def _store(folder: Path, key: str, row: dict[str, Any]) -> dict[str, Any]:
    write_json(folder / f"{_safe(key)}.json", row)
    return row


def _finished(folder: Path, key: str) -> dict[str, Any] | None:
    path = folder / f"{_safe(key)}.json"
    try:
        row = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(row, dict) or row.get("error") or row.get("id") != key:
        return None
    return row


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def _safe(key: str) -> str:
    # Ids such as "100K/1" become file names; a hash suffix keeps two ids from colliding.
    safe = _UNSAFE.sub("_", key)
    if safe != key:
        import hashlib

        safe += "-" + hashlib.sha256(key.encode()).hexdigest()[:8]
    return safe


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


class _LogBar:
    """Progress for a log file or a pipe, where a redrawn bar is a wall of carriage returns: one
    plain line at each tenth of the items and at the end."""

    def __init__(self, total: int, initial: int, desc: str):
        self.total, self.done, self.desc = total, initial, desc
        self.started = time.monotonic()
        self.shown = -1

    def update(self, n: int) -> None:
        self.done += n
        tenth = self.done * 10 // max(1, self.total)
        if tenth != self.shown:
            self.shown = tenth
            elapsed = time.monotonic() - self.started
            print(f"{self.desc}: {self.done}/{self.total} ({elapsed:.0f} s)", file=sys.stderr)

    def close(self) -> None:
        pass


def _bar(total: int, initial: int, desc: str, enabled: bool) -> Any:
    if not enabled:
        return _NoBar()
    if not sys.stderr.isatty():
        return _LogBar(total, initial, desc)
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, desc=desc, file=sys.stderr, dynamic_ncols=True)
