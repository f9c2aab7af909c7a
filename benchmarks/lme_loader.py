"""LongMemEval loading: the old whole-file ``json.load`` against reme-lme's streaming split cache.

Builds synthetic LongMemEval_M-shaped files (questions of ``--sessions`` haystack sessions,
sessions and turns replicated from a real file, new question ids) in a temporary folder, then in
fresh processes (so each peak RSS is its own):

- old: ``json.load`` of the whole file and a pydantic ``Item`` per question (what the runner did);
- parse: ``reme_lme.data.iter_raw`` alone (ijson; the backend is printed);
- new: ``split_items`` into an empty cache (stream, validate, one file per question), the sha256
  the run manifest computes timed apart, then one worker-side ``ItemRef.load``.

The old loader runs on the small file only (``--old-mb``); its figures for the large one are
extrapolated linearly (memory above the interpreter's baseline, and time, scale with the file).

    python benchmarks/lme_loader.py ../shared/data/longmemeval/longmemeval_s_dev50.json.gz \\
        --old-mb 250 --new-mb 1000

Needs reme-lme installed (``pip install -e plugins/lme``). The generated files are deleted.
"""

from __future__ import annotations

import argparse
import gzip
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DEFAULT_SOURCE = (
    Path(__file__).resolve().parents[2] / "shared/data/longmemeval/longmemeval_s_dev50.json.gz"
)


def haystack(item: dict[str, Any]) -> list[tuple[str, str, list[dict[str, Any]]]]:
    return list(
        zip(
            item["haystack_session_ids"],
            item["haystack_dates"],
            item["haystack_sessions"],
            strict=True,
        )
    )


def generate(source: Path, target: Path, megabytes: float, sessions: int) -> int:
    """Write questions built from ``source`` until ``target`` holds ``megabytes``; return how many."""
    opener = gzip.open if source.suffix == ".gz" else open
    with opener(source, "rt", encoding="utf-8") as handle:
        items: list[dict[str, Any]] = json.load(handle)
    pool = [session for item in items for session in haystack(item)]
    limit = int(megabytes * 1e6)
    written, count, cursor = 0, 0, 0
    with target.open("w", encoding="utf-8") as out:
        out.write("[")
        while written < limit:
            base = items[count % len(items)]
            # The base question's own haystack first (its evidence), then borrowed sessions.
            own = haystack(base)
            extra = [pool[(cursor + i) % len(pool)] for i in range(max(0, sessions - len(own)))]
            cursor += len(extra)
            chosen = own + [(f"{sid}_x{count}", d, t) for sid, d, t in extra]
            item = {
                **base,
                "question_id": f"syn{count}_{base['question_id']}",
                "haystack_session_ids": [h[0] for h in chosen],
                "haystack_dates": [h[1] for h in chosen],
                "haystack_sessions": [h[2] for h in chosen],
            }
            text = ("," if count else "") + json.dumps(item, ensure_ascii=False)
            out.write(text)
            written += len(text.encode("utf-8"))
            count += 1
        out.write("]")
    return count


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def child(kind: str, path: Path, cache: Path) -> dict[str, Any]:
    import ijson
    from reme_lme.data import Item, iter_raw, split_items

    from reme_core.bench import dataset_file

    baseline = peak_mb()
    row: dict[str, Any] = {"kind": kind, "baseline_mb": baseline, "backend": ijson.backend}
    started, cpu = time.perf_counter(), cpu_s()
    if kind == "old":
        with path.open(encoding="utf-8") as handle:
            data = json.load(handle)
        items = [Item.model_validate({**raw, "answer": str(raw["answer"])}) for raw in data]
        row["items"] = len(items)
    elif kind == "parse":
        row["items"] = sum(1 for _ in iter_raw(path))
    else:
        hashed = time.perf_counter()
        digest = dataset_file(path).sha256
        row["hash_s"] = time.perf_counter() - hashed
        started, cpu = time.perf_counter(), cpu_s()
        refs = split_items(path, cache, sha256=digest)
        row["items"] = len(refs)
        row["seconds"] = time.perf_counter() - started
        row["cpu_s"] = cpu_s() - cpu
        row["peak_mb"] = peak_mb()
        loaded = time.perf_counter()
        refs[len(refs) // 2].load()
        row["load_one_s"] = time.perf_counter() - loaded
        row["cache_mb"] = sum(p.stat().st_size for p in cache.rglob("*.json")) / 1e6
        return row
    row["seconds"] = time.perf_counter() - started
    row["cpu_s"] = cpu_s() - cpu
    row["peak_mb"] = peak_mb()
    return row


def measure(kind: str, path: Path, work: Path) -> dict[str, Any]:
    cache = work / f"cache-{kind}-{path.stem}"
    try:
        out = subprocess.run(
            [sys.executable, __file__, "--child", kind, str(path), "--cache", str(cache)],
            check=True,
            capture_output=True,
            text=True,
        )
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    row = json.loads(out.stdout.strip().splitlines()[-1])
    row["file_mb"] = path.stat().st_size / 1e6
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, nargs="?", default=DEFAULT_SOURCE)
    parser.add_argument("--old-mb", type=float, default=250)
    parser.add_argument("--new-mb", type=float, default=1000)
    parser.add_argument("--sessions", type=int, default=500, help="haystack sessions per question")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--cache", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.source, args.cache)))
        return
    try:
        import reme_lme  # noqa: F401
    except ImportError:
        sys.exit("needs reme-lme: pip install -e plugins/lme")
    work = Path(tempfile.mkdtemp(prefix="reme-lme-loader-"))
    try:
        small, large = work / "small.json", work / "large.json"
        n_small = generate(args.source, small, args.old_mb, args.sessions)
        n_large = generate(args.source, large, args.new_mb, args.sessions)
        old = measure("old", small, work)
        parse = measure("parse", small, work)
        new_small = measure("new", small, work)
        new_large = measure("new", large, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    scale = new_large["file_mb"] / old["file_mb"]
    old_large = {
        "peak_mb": old["baseline_mb"] + (old["peak_mb"] - old["baseline_mb"]) * scale,
        "seconds": old["seconds"] * scale,
        "cpu_s": old["cpu_s"] * scale,
    }
    print(f"ijson backend: {parse['backend']}; {args.sessions} sessions per question")
    print(
        f"{'file':>14} {'loader':>16} {'items':>6} {'wall s':>7} {'CPU s':>6} {'MB/s':>6} "
        f"{'peak RSS MB':>12}"
    )
    table = [
        (old, "old json.load", n_small),
        (parse, "ijson parse only", n_small),
        (new_small, "new split", n_small),
        (new_large, "new split", n_large),
    ]
    for row, name, count in table:
        print(
            f"{row['file_mb']:>11.0f} MB {name:>16} {count:>6} {row['seconds']:>7.1f} "
            f"{row['cpu_s']:>6.1f} {row['file_mb'] / row['seconds']:>6.0f} {row['peak_mb']:>12.0f}"
        )
    print(
        f"{new_large['file_mb']:>11.0f} MB {'old (extrap.)':>16} {n_large:>6} "
        f"{old_large['seconds']:>7.1f} {old_large['cpu_s']:>6.1f} {'':>6} "
        f"{old_large['peak_mb']:>12.0f}"
    )
    print(
        f"at {new_large['file_mb']:.0f} MB: peak RSS old/new "
        f"{old_large['peak_mb'] / new_large['peak_mb']:.1f}x, time old/new "
        f"{old_large['seconds'] / new_large['seconds']:.2f}x (CPU "
        f"{old_large['cpu_s'] / new_large['cpu_s']:.2f}x); same file ({old['file_mb']:.0f} MB): "
        f"RSS {old['peak_mb'] / new_small['peak_mb']:.1f}x, time "
        f"{old['seconds'] / new_small['seconds']:.2f}x (CPU {old['cpu_s'] / new_small['cpu_s']:.2f}x)"
    )
    print(
        f"new also: sha256 {new_large['hash_s']:.1f} s (the manifest computes it in both), "
        f"cache {new_large['cache_mb']:.0f} MB on disk, one worker load "
        f"{new_large['load_one_s'] * 1000:.0f} ms; interpreter baseline {old['baseline_mb']:.0f} MB"
    )


if __name__ == "__main__":
    main()
