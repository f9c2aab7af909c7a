"""Fusion methods side by side, per dev set: keyword only, vector only, each method and weight.

    python benchmarks/fusion.py --notes 1000 [--embedding e5-onnx] [--weights 0.3,0.5,0.7] \
        [--lme ../shared/data/longmemeval/longmemeval_s_dev50.json.gz]

Sets: the synthetic workspace's planted facts, asked with their keyword query and with their
paraphrase (recall@k: the note holding the fact among the first k distinct notes), and, with
``--lme``, LongMemEval_S dev questions at session level (one note per haystack session, its user
turns, as benchmarks/longmemeval.py builds them; recall_any@k and recall_all@k over sessions;
abstention and no-evidence questions skipped) and, with ``--lme-turns``, at turn level (one note
per user turn; the evidence is the user turns marked ``has_answer``). Each query is ranked once per arm over 200
candidates; then every fusion method (reme_core.search.fusion.fuse, the code the search engine
runs) is applied to the same arm rankings, so the rows differ only by fusion. Keyword-only is the
baseline every row is read against; the last column is the row's worst difference from it.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from synthetic import generate_workspace  # noqa: E402

from reme_core.search.fusion import FUSION_METHODS, fuse  # noqa: E402

CANDIDATES = 200


def note_order(chunk_ids: Sequence[str], path_of: dict[str, str]) -> list[str]:
    seen: dict[str, None] = {}
    for chunk_id in chunk_ids:
        path = path_of.get(chunk_id)
        if path is not None:
            seen.setdefault(path, None)
    return list(seen)


Row = tuple[dict[str, list[tuple[str, float]]], set[str], dict[str, str]]
"""One query: each arm's ranking, the right answers (notes or sessions), chunk id -> answer."""


def synthetic_sets(notes: int, seed: int, overrides: list[str]) -> dict[str, list[Row]]:
    from reme_core.runtime import Reme

    work = Path(tempfile.mkdtemp(prefix="reme-fusion-"))
    try:
        facts = generate_workspace(work / "ws", notes, seed=seed)
        started = time.perf_counter()
        with Reme.open(work / "ws", overrides=overrides) as reme:
            reme.index()
            print(f"indexed {notes} notes in {time.perf_counter() - started:.0f} s", flush=True)
            queries = {
                "synthetic keyword": [(f.query, f.answer_path) for f in facts],
                "synthetic paraphrase": [
                    (f.paraphrase, f.answer_path) for f in facts if f.paraphrase
                ],
            }
            arms = {
                name: [(reme.searcher.rank_arms(q, CANDIDATES), a) for q, a in rows]
                for name, rows in queries.items()
            }
            ids = {
                cid for rows in arms.values() for r, _ in rows for h in r.values() for cid, _ in h
            }
            path_of = {cid: chunk.path for cid, chunk in reme.catalog.chunks(list(ids)).items()}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {name: [(r, {answer}, path_of) for r, answer in rows] for name, rows in arms.items()}


def write_turns(item: dict, root: Path) -> tuple[dict[str, str], set[str]]:
    """One note per user turn (dated by its session); note stem -> turn id, and the evidence
    turns (user turns of evidence sessions marked ``has_answer``)."""
    from reme_lme.ingest import file_id  # opaque: no session id reaches the indexed text

    owners: dict[str, str] = {}
    evidence: set[str] = set()
    answer_sessions = set(item["answer_session_ids"])
    for sid, date, session in zip(
        item["haystack_session_ids"], item["haystack_dates"], item["haystack_sessions"], strict=True
    ):
        day = date[:10].replace("/", "-")
        for number, turn in enumerate(session):
            if turn["role"] != "user":
                continue
            turn_id = f"{sid}#{number}"
            stem = f"{file_id(sid)}-t{number}"
            note = root / "turns" / f"{stem}.md"
            note.parent.mkdir(parents=True, exist_ok=True)
            note.write_text(f"---\ndate: {day}\n---\n{turn['content'].strip()}\n", "utf-8")
            owners[stem] = turn_id
            if sid in answer_sessions and turn.get("has_answer"):
                evidence.add(turn_id)
    return owners, evidence


_PLUGINS: list = []


def _memo_plugins(make):  # type: ignore[no-untyped-def]
    """One memoised plugin set per process (it registers its twins under a fixed name)."""
    if not _PLUGINS:
        _PLUGINS.append(make())
    return _PLUGINS[0]


def lme_set(path: Path, overrides: list[str], limit: int | None, turns: bool = False) -> list[Row]:
    """Per question: each arm's ranking over its haystack, as sessions or as user turns."""
    from bench_plugins import memoised_plugins
    from longmemeval import load, skipped, write_sessions

    from reme_core.runtime import Reme

    plugins = _memo_plugins(memoised_plugins)
    memo = [
        o.replace("components.embedding.name=", "components.embedding.name=memo_")
        for o in overrides
    ]
    items = [item for item in load(path) if not skipped(item)][:limit]
    rows: list[Row] = []
    started = time.perf_counter()
    for number, item in enumerate(items, start=1):
        root = Path(tempfile.mkdtemp(prefix="reme-fusion-lme-"))
        try:
            if turns:
                ids, answers = write_turns(item, root)
            else:
                ids, answers = write_sessions(item, root), set(item["answer_session_ids"])
            if not answers:
                continue
            with Reme.open(root, overrides=memo, plugins=plugins, env={}) as reme:
                reme.index()
                arms = reme.searcher.rank_arms(item["question"], CANDIDATES)
                found = [cid for hits in arms.values() for cid, _ in hits]
                chunks = reme.catalog.chunks(found)
                owner_of = {cid: ids[Path(c.path).stem] for cid, c in chunks.items()}
            rows.append((arms, answers, owner_of))
        finally:
            shutil.rmtree(root, ignore_errors=True)
        if number % 10 == 0:
            print(
                f"  LongMemEval {number}/{len(items)} ({time.perf_counter() - started:.0f} s)",
                flush=True,
            )
    return rows


def scores(rows: list[Row], method: str, weight: float, k: int, lme: bool) -> list[float]:
    """recall@k (synthetic), or recall_any@k and recall_all@k (LongMemEval)."""
    arm_weights = {"keyword": 1.0 - weight, "vector": weight}
    any_hits, all_hits = 0.0, 0.0
    for arms, answers, owner in rows:
        fused = fuse(arms, arm_weights, method=method)  # type: ignore[arg-type]
        top = note_order([f.chunk_id for f in fused], owner)[:k]
        any_hits += any(a in top for a in answers)
        all_hits += all(a in top for a in answers)
    n = max(1, len(rows))
    return [any_hits / n, all_hits / n] if lme else [any_hits / n]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--notes", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--embedding", default="e5-onnx", help="components.embedding name")
    parser.add_argument("--weights", default="0.3,0.5,0.7", help="vector weights to try")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--lme", type=Path, default=None, help="a LongMemEval file")
    parser.add_argument("--lme-limit", type=int, default=None, help="first N scored questions")
    parser.add_argument(
        "--lme-turns", action="store_true", help="also rank user turns (one note per turn)"
    )
    args = parser.parse_args()

    overrides = ["components.file_store.name=local", f"components.embedding.name={args.embedding}"]
    sets: dict[str, tuple[list[Row], bool]] = {
        name: (rows, False)
        for name, rows in synthetic_sets(args.notes, args.seed, overrides).items()
    }
    if args.lme:
        sets["LongMemEval sessions"] = (lme_set(args.lme, overrides, args.lme_limit), True)
        if args.lme_turns:
            rows = lme_set(args.lme, overrides, args.lme_limit, turns=True)
            sets["LongMemEval turns"] = (rows, True)

    weights = [float(w) for w in args.weights.split(",")]
    configs: list[tuple[str, str, float]] = [
        ("keyword only", "rrf", 0.0),
        ("vector only", "rrf", 1.0),
    ]
    configs += [(f"{m} w={w}", m, w) for m in FUSION_METHODS for w in weights]
    header = ["fusion"]
    for name, (_rows, lme) in sets.items():
        header += (
            [f"{name} any@{args.k}", f"{name} all@{args.k}"] if lme else [f"{name} r@{args.k}"]
        )
    header += ["mean", "worst vs keyword"]
    print(
        f"embedding {args.embedding}; queries: "
        + ", ".join(f"{n} {len(r)}" for n, (r, _) in sets.items())
    )
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    baseline: list[float] = []
    for label, method, weight in configs:
        values = [
            v for rows, lme in sets.values() for v in scores(rows, method, weight, args.k, lme)
        ]
        baseline = baseline or values
        worst = min(v - b for v, b in zip(values, baseline, strict=True))
        mean = sum(values) / len(values)
        cells = " | ".join(f"{v:.3f}" for v in values)
        print(f"| {label} | {cells} | {mean:.3f} | {worst:+.3f} |", flush=True)


if __name__ == "__main__":
    main()
