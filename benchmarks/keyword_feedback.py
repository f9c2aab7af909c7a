"""Keyword-arm levers that need the index at query time, on every dev set at once.

    python benchmarks/keyword_feedback.py [--cache DIR] [--sets locomo,realtalk,...]

Builds (once, cached as ``feedback-<set>.json`` beside benchmarks/turn_sets.py's rankings) a
keyword-only index of each dev set's notes, the same notes and chunk ids as the cached
rankings, and records per question:

- ``terms``: the query's tokens (the index's tokenizer) with their document frequency and the
  number of chunks, so the query's own keyword evidence (IDF mass of its matched terms, the
  share of its terms the corpus holds) can be computed without the index;
- ``prf``: pseudo-relevance feedback (RM3-style): for the first M keyword hits (M in
  ``FEEDBACK``) the expansion model ``sum_d score_d/sum score x tf(w,d)/|d| x idf(w)`` over
  their tokens (query tokens left out), its T best terms (T in ``TERMS``) with weights summing
  to 1, and the ranking that weighted query gives (``sum_t w_t x bm25(t, d)``, top 200), from
  the segment's own score matrix (what the index sums for a query).

benchmarks/feedback_levers.py fuses these with the cached arm rankings.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import conversations  # noqa: E402
from fusion_sets import DATA  # noqa: E402
from turn_sets import load_variant, write_variant  # noqa: E402

from reme_core.schema import SearchFilters  # noqa: E402
from reme_core.search.fusion import fuse  # noqa: E402

FEEDBACK = (3, 5, 10)
TERMS = (5, 10, 20)
DEPTH = 200
DEFAULT_WEIGHT = 0.25
VECTOR_SETS = {
    "locomo": [("locomo", "prev")],
    "realtalk": [("realtalk", "prev")],
    "entities": [("entities-keyword", "plain"), ("entities-paraphrase", "plain")],
    "synthetic": [("synthetic-keyword", "plain"), ("synthetic-paraphrase", "plain")],
    "lme-sessions": [("lme-sessions", "plain")],
    "lme-turns": [("lme-turns", "plain")],
}
"""Each set's cached vector rankings (benchmarks/turn_sets.py), as the default indexes them."""
KEYWORD_ONLY = [
    "components.file_store=null",
    "components.embedding=null",
]


def _open(root: Path):  # type: ignore[no-untyped-def]
    from reme_core.runtime import Reme

    return Reme.open(root, overrides=KEYWORD_ONLY, env={})


class Postings:
    """One keyword index's main segment: token -> (chunk positions, bm25 values)."""

    def __init__(self, reme) -> None:  # type: ignore[no-untyped-def]
        index = reme.searcher.arms[0].index
        self.index = index
        with index._lock:
            view = index._refreshed()
        if view.delta is not None and view.delta.seg is not None:
            raise SystemExit("expected one main segment after a fresh index")
        self.seg, self.ids = view.main.seg, view.main.ids
        self.n = len(self.ids)
        self.position = {cid: i for i, cid in enumerate(self.ids)}

    def tokens(self, text: str) -> list[str]:
        return self.index.tokenizer(text)

    def df(self, token: str) -> int:
        ids = self.seg.token_ids([token])
        if not ids:
            return 0
        t = ids[0]
        return int(self.seg.indptr[t + 1] - self.seg.indptr[t])

    def idf(self, token: str) -> float:
        df = self.df(token)
        return math.log((self.n - df + 0.5) / (df + 0.5) + 1.0)

    def weighted(self, terms: dict[str, float], limit: int, allowed: set[str]) -> list[list]:
        scores = np.zeros(self.seg.n_docs, dtype=np.float64)
        for token, weight in terms.items():
            for t in self.seg.token_ids([token]):
                start, end = int(self.seg.indptr[t]), int(self.seg.indptr[t + 1])
                docs = self.seg.indices[start:end].astype(np.intp)
                scores[docs] += weight * self.seg.data[start:end]
        found = np.flatnonzero(scores > 0)
        order = found[np.argsort(-scores[found], kind="stable")]
        kept = [i for i in order if self.ids[int(i)].rpartition("#")[0] in allowed][:limit]
        return [[self.ids[int(i)], round(float(scores[i]), 6)] for i in kept]


def expansions(
    post: Postings,
    texts: dict[str, str],
    top: list,
    query: list[str],
    allowed: set[str],
    idf: dict[str, float],
) -> dict[str, dict]:
    """RM3 expansion from the feedback chunks ``top`` (``(chunk id, weight)`` best first): for each
    M and T, the T best terms and the ranking of that weighted query."""
    out: dict[str, dict] = {}
    qset = set(query)
    for m in FEEDBACK:
        chosen = top[:m]
        total = sum(s for _, s in chosen) or 1.0
        model: Counter[str] = Counter()
        for cid, s in chosen:
            tokens = [t for t in post.tokens(texts.get(cid, "")) if t not in qset]
            if not tokens:
                continue
            for token, tf in Counter(tokens).items():
                if token not in idf:
                    idf[token] = post.idf(token)
                model[token] += (s / total) * (tf / len(tokens)) * idf[token]
        for t in TERMS:
            best = model.most_common(t)
            mass = sum(w for _, w in best)
            if mass <= 0:
                out[f"{m}:{t}"] = {"terms": [], "ranking": []}
                continue
            weights = {token: w / mass for token, w in best}
            out[f"{m}:{t}"] = {
                "terms": [[k, round(v, 4)] for k, v in weights.items()],
                "ranking": post.weighted(weights, DEPTH, allowed),
            }
    return out


def record(reme, post: Postings, question: str, allowed: set[str], vector: list | None) -> dict:  # type: ignore[no-untyped-def]
    """The search's own keyword ranking (default filters: archived notes left out) and the
    feedback rankings, filtered the same way: from the first keyword hits (``prf``) and from the
    first hits of the default fusion with the cached vector ranking ``vector`` (``prf_fused``)."""
    hits = reme.searcher.rank_arms(question, DEPTH)["keyword"]
    query = post.tokens(question)
    terms = [[t, post.df(t)] for t in dict.fromkeys(query)]
    fused: list = []
    if vector is not None:
        arms = {"keyword": hits, "vector": [(c, s) for c, s in vector]}
        ranked = fuse(
            arms, {"keyword": 1 - DEFAULT_WEIGHT, "vector": DEFAULT_WEIGHT}, method="convex"
        )
        fused = [(f.chunk_id, f.score) for f in ranked[: max(FEEDBACK)]]
    ids = [cid for cid, _ in hits[: max(FEEDBACK)]] + [cid for cid, _ in fused]
    texts = reme.catalog.chunk_texts(list(dict.fromkeys(ids)))
    idf: dict[str, float] = {}
    out = {
        "question": question,
        "keyword": [[c, round(s, 6)] for c, s in hits],
        "terms": terms,
        "n": post.n,
        "prf": expansions(post, texts, hits, query, allowed, idf),
    }
    if vector is not None:
        out["prf_fused"] = expansions(post, texts, fused, query, allowed, idf)
    return out


def _workspace_rows(root: Path, questions: list[str], vectors: list) -> list[dict]:
    """One record per question; ``vectors`` yields each question's cached vector ranking."""
    with _open(root) as reme:
        reme.index()
        post = Postings(reme)
        filters = SearchFilters(statuses=list(reme.searcher.config.statuses))
        allowed = set(reme.searcher._allowed.get(filters).paths)
        out = []
        for q in questions:
            cached = next(vectors)
            if cached["question"] != q:
                raise SystemExit("cached rankings out of order; rebuild them")
            out.append(record(reme, post, q, allowed, cached["arms"]["vector"]))
        return out


def build(name: str, cache: Path) -> list[dict]:
    rows: list[dict] = []
    vectors = iter([r for label in VECTOR_SETS[name] for r in load_variant(*label, cache)])
    if name in ("locomo", "realtalk"):
        chats = (
            list(conversations.locomo(DATA / "locomo" / "locomo_dev2.json"))
            if name == "locomo"
            else list(conversations.realtalk(DATA / "realtalk"))
        )
        for chat in chats:
            work = Path(tempfile.mkdtemp(prefix="reme-prf-"))
            try:
                write_variant(chat, work, "plain")
                rows += _workspace_rows(work, [q.question for q in chat.questions], vectors)
            finally:
                shutil.rmtree(work, ignore_errors=True)
    elif name in ("synthetic", "entities"):
        from synthetic import generate_workspace
        from synthetic_entities import generate

        make = generate_workspace if name == "synthetic" else generate
        work = Path(tempfile.mkdtemp(prefix="reme-prf-syn-"))
        try:
            facts = make(work, 1000, 0)
            questions = []
            for part in ("keyword", "paraphrase"):
                for fact in facts:
                    q = fact.query if part == "keyword" else fact.paraphrase
                    if q:
                        questions.append(q)
            rows = _workspace_rows(work, questions, vectors)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    elif name in ("lme-sessions", "lme-turns"):
        from fusion import write_turns
        from longmemeval import load, skipped, write_sessions

        items = [
            i for i in load(DATA / "longmemeval" / "longmemeval_s_dev50.json.gz") if not skipped(i)
        ]
        for item in items:
            work = Path(tempfile.mkdtemp(prefix="reme-prf-lme-"))
            try:
                if name == "lme-sessions":
                    write_sessions(item, work)
                    answers = set(item["answer_session_ids"])
                else:
                    _, answers = write_turns(item, work)
                if answers:
                    rows += _workspace_rows(work, [item["question"]], vectors)
            finally:
                shutil.rmtree(work, ignore_errors=True)
    else:
        raise SystemExit(f"unknown set {name!r}")
    return rows


def load_feedback(name: str, cache: Path, rankings: Path | None = None) -> list[dict]:
    """One record per question, in the cached rankings' order (built and cached under ``cache``
    when missing, from the arm rankings cached under ``rankings``, default ``cache``)."""
    cache.mkdir(parents=True, exist_ok=True)
    file = cache / f"feedback-{name}.json"
    if not file.is_file():
        print(f"building keyword feedback for {name} ...", flush=True)
        file.write_text(json.dumps(build(name, rankings or cache)), "utf-8")
    return json.loads(file.read_text("utf-8"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "reme" / "turns")
    parser.add_argument("--feedback-cache", type=Path, default=None, help="default --cache")
    parser.add_argument(
        "--sets", default="locomo,realtalk,entities,synthetic,lme-sessions,lme-turns"
    )
    args = parser.parse_args()
    for name in args.sets.split(","):
        records = load_feedback(name, args.feedback_cache or args.cache, args.cache)
        print(f"{name}: {len(records)} questions")


if __name__ == "__main__":
    main()
