"""Peak resident memory: keyword-only beside the default hybrid (e5-onnx + zvec), measured in the
same run, opening a workspace, indexing it and serving a query.

    python benchmarks/embedder_memory.py [--notes 1000] [--old] [--baseline-src DIR]

    # DIR: the source tree before issue 21's lean embedder:
    git archive 0a06e14 reme_core reme_plugins | tar -x -C DIR

Every figure is the peak RSS (``ru_maxrss``) of a fresh interpreter that does one stage, so each
is its own:

- ``open``: open a one-note workspace and index it (the embedder loads on its first text);
- ``index``: open a workspace of ``--notes`` synthetic notes (benchmarks/synthetic.py) and index
  it from nothing;
- ``query``: open that indexed workspace and answer one search, then nine more.

Sides: ``keyword`` (components.embedding and file_store null), ``hybrid`` (the defaults) and,
with ``--old``, ``hybrid-old``: the defaults with this tree's e5-onnx given back the three things
that cost most before issue 21's lean embedder (the ``tokenizers`` library's unigram model as its
tokenizer, onnxruntime's memory arena on, a passage batch spread over one worker per core); with ``--baseline-src``, ``keyword-before`` and ``before``: keyword-only and the
defaults with the ``DIR`` tree on PYTHONPATH (the whole tree as it was). Ratios are against ``keyword``. The built ONNX model is made (if missing) before any
stage, so no stage pays for building it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from synthetic import generate_workspace  # noqa: E402

KEYWORD_ONLY = ["components.embedding=null", "components.file_store=null"]
SIDES = {
    "keyword": KEYWORD_ONLY,
    "hybrid": [],
    "hybrid-old": [],
    "keyword-before": KEYWORD_ONLY,
    "before": [],
}
BASELINE_SIDES = ("keyword-before", "before")  # run with --baseline-src's tree
STAGES = ("open", "index", "query")
QUERIES = [
    "why did the deploy fail",
    "what day was the budget review moved to",
    "who owns the vault code",
    "where is the team meeting",
    "wifi password of the office",
    "which allergy does she have",
    "go-live date of the project",
    "favourite drink",
    "phone extension of the front desk",
    "where are the spare keys hidden",
]


# -- one stage, in its own process -------------------------------------------------------------


def _old_embedder() -> None:
    """e5-onnx as before the lean embedder: the library's tokenizer, the memory arena on, a
    passage batch spread over one worker per core (the weights are read from beside the graph
    as now: that changes only the session load's peak)."""
    import numpy as np
    from tokenizers import Tokenizer, models

    from reme_plugins import e5_tokenizer, embedding_e5_onnx, onnx_session

    class LibraryTokenizer(e5_tokenizer.E5Tokenizer):
        def __init__(self, packed):  # type: ignore[no-untyped-def]
            pieces, scores = packed.vocabulary()
            vocabulary = [(p, float(s)) for p, s in zip(pieces, scores, strict=True)]
            self._library = Tokenizer(models.Unigram(vocabulary, unk_id=packed.unk))
            self._table = packed.normalization
            self.bos, self.eos, self.unk = packed.bos, packed.eos, packed.unk

        def content(self, text: str) -> list[int]:
            normal = e5_tokenizer._SPACES.sub(" ", text.translate(self._table))
            if not normal.startswith(" "):
                normal = " " + normal
            encoding = self._library.encode(
                normal.replace(" ", e5_tokenizer._METASPACE), add_special_tokens=False
            )
            ids: list[int] = []
            for token, (start, end) in zip(encoding.ids, encoding.offsets, strict=True):
                ids.extend(
                    [token] * (end - start) if token == self.unk and end > start else [token]
                )
            return ids

    def runner(model_path, threads, name, arena=True, intra_op=False):  # type: ignore[no-untyped-def]
        return onnx_session.OnnxRunner(model_path, threads, name, arena=True)  # a text per core

    def embed_passages(self, texts):  # type: ignore[no-untyped-def]
        rows = [self._ids(t, is_query=False) for t in texts]
        if not rows:
            return np.zeros((0, self.dim), dtype=np.float32)
        session, packed = self._runner.session(), self._weights()
        pool = self._runner.workers()
        runs = pool.map(lambda r: embedding_e5_onnx._run(session, packed, r), rows)
        return embedding_e5_onnx._checked(np.stack(list(runs)), len(rows), self.dim)

    embedding_e5_onnx.E5Tokenizer = LibraryTokenizer  # type: ignore[misc]
    embedding_e5_onnx.OnnxRunner = runner  # type: ignore[misc,assignment]
    embedding_e5_onnx.E5OnnxEmbedding.embed_passages = embed_passages  # type: ignore[method-assign]


def child(side: str, stage: str, workspace: Path) -> dict:
    started = time.perf_counter()
    if side == "hybrid-old":
        _old_embedder()
    from reme_core.runtime import Reme

    with Reme.open(workspace, overrides=SIDES[side]) as reme:
        if stage in ("open", "index"):
            reme.index()
        else:
            for query in QUERIES:
                reme.search(query, limit=5)
        chunks = reme.catalog.counts()["chunks"]
    return {
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "seconds": time.perf_counter() - started,
        "chunks": chunks,
    }


# -- the run -----------------------------------------------------------------------------------


def run_stage(side: str, stage: str, workspace: Path, baseline: Path | None) -> dict:
    env = dict(os.environ)
    if side in BASELINE_SIDES and baseline is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(baseline), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, __file__, "--child", side, stage, str(workspace)],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    if done.returncode != 0:
        raise SystemExit(f"{side} {stage} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(
    notes: int, sides: list[str], seed: int, scratch: Path, baseline: Path | None
) -> dict[str, dict]:
    from reme_plugins.embedding_e5_onnx import ensure_model

    ensure_model("original", quantize=True)  # built once here, not inside a measured stage
    results: dict[str, dict] = {}
    for side in sides:
        results[side] = {}
        one = scratch / side / "one"
        generate_workspace(one, 1, seed=seed)
        results[side]["open"] = run_stage(side, "open", one, baseline)
        many = scratch / side / "many"
        generate_workspace(many, notes, seed=seed)
        results[side]["index"] = run_stage(side, "index", many, baseline)
        results[side]["query"] = run_stage(side, "query", many, baseline)
    return results


def report(results: dict[str, dict], notes: int) -> None:
    sides = list(results)
    header = f"{'stage':<24}" + "".join(f"{s + ' MB':>16}" for s in sides)
    header += "".join(f"{s + ' / kw':>16}" for s in sides[1:])
    print(header)
    labels = {
        "open": "open (1 note)",
        "index": f"index {notes} notes",
        "query": "query (10 searches)",
    }
    for stage in STAGES:
        row = [results[s][stage]["peak_mb"] for s in sides]
        line = f"{labels[stage]:<24}" + "".join(f"{mb:>16.0f}" for mb in row)
        line += "".join(f"{mb / row[0]:>15.2f}x" for mb in row[1:])
        print(line)
    timing = ", ".join(
        f"{s} {index['seconds']:.0f} s ({index['chunks']} chunks, "
        f"{index['chunks'] / index['seconds']:.1f}/s)"
        for s, index in ((s, results[s]["index"]) for s in sides)
    )
    print(f"peak RSS (ru_maxrss) of a fresh process per stage; indexing took: {timing}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--old", action="store_true", help="also the embedder before issue 21")
    parser.add_argument(
        "--baseline-src", type=Path, help="a source tree to measure as `before` (see above)"
    )
    parser.add_argument("--json", type=Path, help="write the figures here too")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        side, stage, workspace = args.child
        print(json.dumps(child(side, stage, Path(workspace))))
        return 0
    sides = ["keyword", "hybrid", *(["hybrid-old"] if args.old else [])]
    if args.baseline_src:
        sides += BASELINE_SIDES
    scratch = Path(tempfile.mkdtemp(prefix="reme-embedder-memory-"))
    try:
        results = measure(args.notes, sides, args.seed, scratch, args.baseline_src)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    report(results, args.notes)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
