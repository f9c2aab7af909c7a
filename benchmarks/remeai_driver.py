"""ReMe 0.4.2 (PyPI `reme-ai==0.4.2.0`) side of benchmarks/keyword_vs_remeai.py.

Runs inside a separate virtual environment that has reme-ai installed (it needs the `as` extra for
its step classes; no torch), never imports reme (this project), and prints one JSON object.

    python benchmarks/remeai_driver.py build WORKSPACE
    python benchmarks/remeai_driver.py query WORKSPACE QUERIES.json

ReMe runs keyword-only, as its default config ships it (no embedding store): BM25 (its own
inverted index) over chunks held in memory, state under WORKSPACE/metadata/. Its "benchmark"
preset is used (no background watchers or cron jobs), with the manual `index_update` job widened to
the folders the synthetic workspace writes (daily/, digest/, resource/) and two search jobs:
`search` (ReMe's default search step: BM25 arm, link expansion up to 10 per direction) and
`bm25_search` (the keyword-only step, no link expansion).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

_QUERY_PARAMS = {
    "type": "object",
    "properties": {"query": {"type": "string"}, "limit": {"type": "integer", "default": 5}},
    "required": ["query"],
}


def _config(workspace: Path) -> dict:
    from reme.config import resolve_app_config

    return resolve_app_config(
        log_config=False,
        config="benchmark",
        workspace_dir=str(workspace),
        enable_logo=False,
        log_to_console=False,
        log_to_file=False,
        jobs={
            "index_update": {
                "watch_dirs": ["daily_dir", "digest_dir", "resource_dir"],
                "watch_suffixes": ["md"],
            },
            "bm25_search": {
                "backend": "base",
                "parameters": _QUERY_PARAMS,
                "steps": [{"backend": "bm25_search_step"}],
            },
            "search": {
                "backend": "base",
                "parameters": _QUERY_PARAMS,
                "steps": [
                    {
                        "backend": "search_step",
                        "vector_weight": 0.7,
                        "candidate_multiplier": 5.0,
                        "expand_links": True,
                        "max_links_per_direction": 10,
                    }
                ],
            },
        },
    )


def _state_bytes(workspace: Path) -> int:
    return sum(p.stat().st_size for p in (workspace / "metadata").rglob("*") if p.is_file())


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _paths(response) -> list[str]:
    return [r["path"] for r in response.metadata.get("results", [])]


async def build(workspace: Path) -> dict:
    started = time.perf_counter()
    from reme.reme import ReMe

    app = ReMe(**_config(workspace))
    await app.start()
    await app.run_job("index_update")
    store = app.context.components["file_store"]["default"]
    chunks = len(store.file_chunks)
    await app.close()  # persists the chunk store, the BM25 pickle and the graph
    return {
        "build_s": time.perf_counter() - started,
        "chunks": chunks,
        "state_bytes": _state_bytes(workspace),
    }


async def query(workspace: Path, queries: list[dict]) -> dict:
    started = time.perf_counter()
    from reme.reme import ReMe

    imported = time.perf_counter()
    app = ReMe(**_config(workspace))
    await app.start()  # loads the chunk store and the BM25 index
    opened = time.perf_counter()
    await app.run_job("search", query=queries[0]["query"], limit=5)
    first = time.perf_counter()
    out: dict = {
        "import_s": imported - started,
        "open_s": opened - imported,
        "first_search_s": first - opened,
    }
    for job in ("search", "bm25_search"):
        for q in queries[:20]:  # warm up
            await app.run_job(job, query=q["query"], limit=5)
        latencies, hits = [], 0
        for _ in range(3):
            for q in queries:
                t0 = time.perf_counter()
                response = await app.run_job(job, query=q["query"], limit=5)
                latencies.append(time.perf_counter() - t0)
        for q in queries:
            response = await app.run_job(job, query=q["query"], limit=5)
            hits += q["answer_path"] in _paths(response)[:5]
        out[job] = {
            "p50_ms": _percentile(latencies, 0.5) * 1000,
            "p95_ms": _percentile(latencies, 0.95) * 1000,
            "recall_at_5": hits / len(queries),
        }
    noop = []
    for _ in range(5):  # keyword_vs_remeai.NOOP_RUNS
        t0 = time.perf_counter()
        await app.run_job("index_update")  # nothing changed: its mtime diff finds no work
        noop.append(time.perf_counter() - t0)
    out["noop_index_s"] = sorted(noop)[len(noop) // 2]
    await app.close()
    return out


async def noop(workspace: Path) -> dict:
    """One no-op index in a fresh process, as a scheduled `index_update` run would pay it."""
    from reme.reme import ReMe

    app = ReMe(**_config(workspace))
    await app.start()
    t0 = time.perf_counter()
    await app.run_job("index_update")
    elapsed = time.perf_counter() - t0
    await app.close()
    return {"noop_index_s": elapsed}


def main() -> None:
    mode, workspace = sys.argv[1], Path(sys.argv[2])
    if mode == "build":
        result = asyncio.run(build(workspace))
    elif mode == "noop":
        result = asyncio.run(noop(workspace))
    else:
        queries = json.loads(Path(sys.argv[3]).read_text(encoding="utf-8"))
        result = asyncio.run(query(workspace, queries))
    import reme

    result["version"] = getattr(reme, "__version__", "?")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
