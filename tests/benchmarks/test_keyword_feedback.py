"""The feedback harness: its postings score as the keyword index does, RM3 interpolation, the
query's keyword evidence and the neighbour boost, on small hand-made inputs."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import feedback_levers  # noqa: E402
import keyword_feedback  # noqa: E402


def _question(keyword, prf, terms=(("a", 1),)):  # type: ignore[no-untyped-def]
    return {
        "arms": {"keyword": list(keyword), "vector": []},
        "feedback": {"terms": [list(t) for t in terms], "prf": {"3:5": {"ranking": list(prf)}}},
    }


def test_no_feedback_weight_keeps_the_keyword_order() -> None:
    q = _question([("k1", 3.0), ("k2", 2.0)], [("k2", 9.0), ("new", 8.0)])
    kept = feedback_levers.expanded(q, "3:5", 0.0, 200)
    assert [c for c, _ in kept[:2]] == ["k1", "k2"]
    assert dict(kept)["new"] == 0.0


def test_feedback_adds_its_own_finds_and_reorders() -> None:
    q = _question([("k1", 3.0), ("k2", 2.0)], [("k2", 9.0), ("new", 8.0)])
    ranked = feedback_levers.expanded(q, "3:5", 0.5, 200)
    # 0.5 x 3 / 1 + 0 = 1.5 for k1; 0.5 x 2 + 0.5 x 9 = 5.5 for k2; 4.0 for new.
    assert ranked == [("k2", 5.5), ("new", 4.0), ("k1", 1.5)]
    assert [c for c, _ in feedback_levers.expanded(q, "3:5", 0.5, 2)] == ["k2", "new"]


def test_a_clear_keyword_winner_gets_no_feedback_under_the_gap_guard() -> None:
    q = _question([("k1", 10.0), ("k2", 2.0)], [("new", 50.0)])
    assert feedback_levers.expanded(q, "3:5", 0.5, 200, guard="gap0.5") == q["arms"]["keyword"]
    assert feedback_levers.expanded(q, "3:5", 0.5, 200, guard="gap0.9")[0][0] == "new"


def test_query_features_from_document_frequencies() -> None:
    features = feedback_levers.query_features(
        {"n": 100, "terms": [["rare", 1], ["common", 50], ["unseen", 0]]}
    )

    def idf(df: int) -> float:
        return math.log((100 - df + 0.5) / (df + 0.5) + 1.0)

    assert features["idf_mass"] == pytest.approx(idf(1) + idf(50))
    assert features["idf_share"] == pytest.approx((idf(1) + idf(50)) / (2 * idf(1) + idf(50)))
    assert features["matched"] == pytest.approx(2 / 3)
    assert features["tokens"] == 3.0


def test_neighbours_by_chunk_and_by_turn() -> None:
    scored = [("n.md#0", 1.0), ("m.md#0", 0.5), ("n.md#1", 0.4)]
    # n.md#1 gains 0.5 x 1.0 from n.md#0 and passes m.md#0; m.md#0 has no candidate neighbour.
    assert feedback_levers.neighbours(scored, {}, 0.5, "chunk") == ["n.md#0", "n.md#1", "m.md#0"]
    owner = {"a.md#0": "D1:3", "b.md#0": "D2:1", "c.md#0": "D1:4"}
    scored = [("a.md#0", 1.0), ("b.md#0", 0.5), ("c.md#0", 0.4)]
    assert feedback_levers.neighbours(scored, owner, 0.5, "turn") == ["a.md#0", "c.md#0", "b.md#0"]
    assert feedback_levers.neighbours(scored, owner, 0.0, "turn") == ["a.md#0", "b.md#0", "c.md#0"]


def test_postings_score_as_the_keyword_index_and_feedback_leaves_the_query_out(
    tmp_path: Path,
) -> None:
    notes = {
        "a.md": "The greenhouse tomatoes ripened early this summer.",
        "b.md": "Tomatoes need a warm greenhouse and steady watering.",
        "c.md": "The deploy failed because the cache was stale.",
    }
    for name, text in notes.items():
        (tmp_path / name).write_text(f"{text}\n", "utf-8")
    with keyword_feedback._open(tmp_path) as reme:
        reme.index()
        post = keyword_feedback.Postings(reme)
        assert post.n == 3
        token = post.tokens("greenhouse")[0]
        assert post.df(token) == 2
        assert post.df("zzzxqv") == 0
        allowed = {"a.md", "b.md", "c.md"}
        mine = post.weighted({token: 1.0}, 10, allowed)
        theirs = post.index.search("greenhouse", 10)
        assert [c for c, _ in mine] == [c for c, _ in theirs]
        assert [s for _, s in mine] == pytest.approx([s for _, s in theirs], rel=1e-5)
        assert post.weighted({token: 1.0}, 10, {"b.md"}) == [
            mine[[c for c, _ in mine].index("b.md#0")]
        ]
        rec = keyword_feedback.record(reme, post, "greenhouse tomatoes", allowed, None)
    query = set(post.tokens("greenhouse tomatoes"))
    assert rec["n"] == 3 and {t for t, _ in rec["terms"]} == query
    assert "prf_fused" not in rec
    for key, expansion in rec["prf"].items():
        words = {t for t, _ in expansion["terms"]}
        assert words and not words & query, key
        assert sum(w for _, w in expansion["terms"]) == pytest.approx(1.0, abs=1e-3)
