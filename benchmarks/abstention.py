"""Abstention measured: does ``no_match`` tell "nothing relevant" from a weak match, and what
would a ``min_score`` cost?

    python benchmarks/abstention.py [--cache DIR] [--sets synthetic,entities,locomo,realtalk]

Answerable questions are the dev sets' (benchmarks/fusion_sets.py, cached rankings of each arm
over 200 candidates): the synthetic workspace's and the planted-entity set's facts (keyword and
paraphrase questions), LoCoMo categories 1-4 and REALTALK. Unanswerable ones are LoCoMo category 5
(adversarial: asked about the wrong speaker or a thing never said) and our own negatives
(benchmarks/abstention_queries.py: nonsense words and off-topic questions), ranked against every
dev workspace (cached the same way). ``no_match`` is reme_core.search.abstention.no_match, the
function the engine runs, applied to the same arm rankings a search would see (each arm cut to
the 50 candidates a ``limit=10`` search fetches).

Table 1, per query group: how often ``no_match`` is set, and for answerable questions how often
it is set although the evidence is among the first 10 results (a hit the flag would talk the
caller out of). Then precision and recall of ``no_match`` as a detector of unanswerable queries.
Table 2: ``min_score`` (on the default fusion, convex at vector weight 0.25) against recall@10
on every set's answerable questions and the share of unanswerable queries left with no hit.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import conversations  # noqa: E402
import fusion_sets  # noqa: E402
from abstention_queries import negatives  # noqa: E402
from fusion_levers import score  # noqa: E402
from fusion_sets import Row  # noqa: E402

from reme_core.bench import vector_cache  # noqa: E402
from reme_core.search.abstention import floors_for, no_match  # noqa: E402
from reme_core.search.fusion import fuse  # noqa: E402

CANDIDATES = 50
"""What a ``limit=10`` search fetches per arm (limit x candidate_multiplier 5)."""
K = 10
WEIGHTS = {"keyword": 0.75, "vector": 0.25}
MIN_SCORES = (0.0, 0.05, 0.1, 0.2, 0.26, 0.5, 0.76, 0.8, 0.9)


def _workspaces() -> dict:
    """Workspace name -> a function writing it under a folder (the dev sets' workspaces)."""
    from synthetic import generate_workspace
    from synthetic_entities import generate

    data = fusion_sets.DATA
    out = {
        "synthetic": lambda root: generate_workspace(root, 1000, 0),
        "entities": lambda root: generate(root, 1000, 0),
    }
    chats = [("locomo", c) for c in conversations.locomo(data / "locomo" / "locomo_dev2.json")]
    chats += [("realtalk", c) for c in conversations.realtalk(data / "realtalk")]
    for family, chat in chats:
        out[f"{family}:{chat.name}"] = lambda root, chat=chat: conversations.write_turns(chat, root)
    return out


def _rank_negatives(embedding: str) -> list[dict]:
    rows = []
    for name, write in _workspaces().items():
        work = Path(tempfile.mkdtemp(prefix="reme-abstain-"))
        try:
            write(work)
            with fusion_sets._open(work, embedding) as reme:
                reme.index()
                for kind, question in negatives():
                    arms = reme.searcher.rank_arms(question, fusion_sets.CANDIDATES)
                    rows.append(
                        {
                            "question": question,
                            "set": name.split(":")[0],
                            "workspace": name,
                            "group": kind,
                            "arms": {a: [[c, round(s, 6)] for c, s in h] for a, h in arms.items()},
                        }
                    )
            vector_cache.harvest(work, fusion_sets.SHARED_VECTORS)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        print(f"  negatives ranked in {name}", flush=True)
    return rows


def load_negatives(cache: Path, embedding: str = "e5-onnx") -> list[dict]:
    file = cache / f"abstention-negatives.{embedding}.json"
    if not file.is_file():
        started = time.perf_counter()
        print("ranking the negative queries ...", flush=True)
        cache.mkdir(parents=True, exist_ok=True)
        file.write_text(json.dumps(_rank_negatives(embedding)), "utf-8")
        print(f"ranked in {time.perf_counter() - started:.0f} s", flush=True)
    return json.loads(file.read_text("utf-8"))


def cut(arms: dict) -> dict[str, list[tuple[str, float]]]:
    return {arm: [(c, s) for c, s in hits[:CANDIDATES]] for arm, hits in arms.items()}


def answerable_groups(sets: dict[str, list[Row]]) -> dict[str, list[Row]]:
    """Set name -> its answerable rows; LoCoMo category 5 apart, as ``locomo cat 5``."""
    out: dict[str, list[Row]] = {}
    for name, rows in sets.items():
        out[name] = [r for r in rows if r["group"] != "adversarial"]
        cat5 = [r for r in rows if r["group"] == "adversarial"]
        if cat5:
            out[f"{name} cat 5"] = cat5
    return out


def negative_groups(rows: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in rows:
        out.setdefault(f"{r['group']} ({r['set']})", []).append(r)
    return out


def fused(arms: dict, min_score: float = 0.0) -> list[str]:
    return [f.chunk_id for f in fuse(arms, WEIGHTS, method="convex") if f.score >= min_score]


def flag_table(
    answerable: dict[str, list[Row]], unanswerable: dict[str, list[dict]], floors
) -> list[str]:
    lines = [
        "| queries | answerable | n | no_match set | ... with the evidence in the top 10 |",
        "|---|---|---|---|---|",
    ]
    for name, rows in answerable.items():
        flags = [no_match(cut(r["arms"]), floors) for r in rows]
        found = [score(r, fused(cut(r["arms"])), K) > 0 for r in rows]
        both = sum(f and h for f, h in zip(flags, found, strict=True))
        kind = "no (LoCoMo adversarial)" if name.endswith("cat 5") else "yes"
        lines.append(
            f"| {name} | {kind} | {len(rows)} | {sum(flags) / len(rows):.3f} | {both / len(rows):.3f} |"
        )
    for name, rows in unanswerable.items():
        flags = [no_match(cut(r["arms"]), floors) for r in rows]
        lines.append(f"| {name} | no | {len(rows)} | {sum(flags) / len(rows):.3f} | |")
    return lines


def detector(
    answerable: dict[str, list[Row]], unanswerable: dict[str, list[dict]], floors
) -> list[str]:
    """Precision and recall of no_match as a detector of unanswerable queries."""
    positives = [r for n, rows in answerable.items() if not n.endswith("cat 5") for r in rows]
    cat5 = [r for n, rows in answerable.items() if n.endswith("cat 5") for r in rows]
    ours = [r for rows in unanswerable.values() for r in rows]
    lines = ["| unanswerable counted | precision | recall | F1 |", "|---|---|---|---|"]
    false_alarms = sum(no_match(cut(r["arms"]), floors) for r in positives)
    for label, negatives_ in (
        ("our negatives", ours),
        ("LoCoMo cat 5", cat5),
        ("both", ours + cat5),
    ):
        caught = sum(no_match(cut(r["arms"]), floors) for r in negatives_)
        precision = caught / max(1, caught + false_alarms)
        recall = caught / max(1, len(negatives_))
        f1 = 2 * precision * recall / max(1e-9, precision + recall)
        lines.append(f"| {label} ({len(negatives_)}) | {precision:.3f} | {recall:.3f} | {f1:.3f} |")
    return lines


def min_score_table(
    answerable: dict[str, list[Row]], unanswerable: dict[str, list[dict]], floors
) -> list[str]:
    names = list(answerable)
    kinds: dict[str, list[dict]] = {}  # every workspace's negatives of a kind together
    for name, rows in unanswerable.items():
        kinds.setdefault(name.split(" (")[0], []).extend(rows)
    negative_names = list(kinds)
    header = ["min_score", *[f"{n} R@{K}" for n in names], *[f"{n} no hit" for n in negative_names]]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    configs: list[tuple[str, float, bool]] = [(f"{m}", m, False) for m in MIN_SCORES]
    configs.append(("0 + hits dropped when no_match", 0.0, True))
    for label, threshold, abstain in configs:
        cells = []
        for name in names:
            rows = answerable[name]
            total = 0.0
            for r in rows:
                arms = cut(r["arms"])
                if abstain and no_match(arms, floors):
                    continue
                total += score(r, fused(arms, threshold), K)
            cells.append(f"{total / len(rows):.3f}")
        for name in negative_names:
            rows = kinds[name]
            empty = 0
            for r in rows:
                arms = cut(r["arms"])
                empty += (abstain and no_match(arms, floors)) or not fused(arms, threshold)
            cells.append(f"{empty / len(rows):.3f}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "reme" / "fusion")
    parser.add_argument("--sets", default="synthetic,entities,locomo,realtalk")
    args = parser.parse_args()
    from reme_plugins.embedding_e5_onnx import E5OnnxEmbedding

    model_id = E5OnnxEmbedding().model_id
    floors = floors_for(model_id)
    sets = fusion_sets.load_sets(args.sets.split(","), args.cache)
    answerable = answerable_groups(sets)
    unanswerable = negative_groups(load_negatives(args.cache))
    print(f"embedding {model_id}: floors {floors}; each arm cut to {CANDIDATES} candidates")
    print("\n".join(flag_table(answerable, unanswerable, floors)))
    print()
    print("\n".join(detector(answerable, unanswerable, floors)))
    print()
    print("\n".join(min_score_table(answerable, unanswerable, floors)))


if __name__ == "__main__":
    main()
