"""The BM25 floor: single messages ranked by plain BM25, scored at k messages shown, and its
column beside the configs in compare.md."""

from __future__ import annotations

from reme_beam.data import BeamMessage
from reme_beam.floor import MessageBm25, floor_metrics, tokens
from reme_beam.report import overall_markdown, side_by_side_markdown

from reme_core.bench import RunResult


def _msg(ident: int, role: str, content: str) -> BeamMessage:
    return BeamMessage(id=ident, role=role, content=content)


MESSAGES = [
    _msg(1, "user", "I adopted a beagle named Pixel ->-> 1,1"),
    _msg(2, "assistant", "Beagles need long walks; Pixel will love the park."),
    _msg(3, "user", "My sister moved to Lisbon in May."),
    _msg(4, "system", "pixel pixel pixel"),  # not a conversation turn: not a document
    _msg(5, "user", "Remind me about the dentist."),
]


def test_tokens_are_lower_cased_word_runs() -> None:
    assert tokens("Pixel's 2nd walk -> park!") == ["pixel", "s", "2nd", "walk", "park"]


def test_messages_rank_by_bm25_and_unmatched_ones_are_left_out() -> None:
    floor = MessageBm25(MESSAGES)
    assert floor.ids == ["1", "2", "3", "5"]  # user and assistant messages only
    assert floor.rank("Where did my sister move?", 10) == ["3"]
    ranked = floor.rank("pixel beagle", 10)
    assert ranked[0] == "1" and set(ranked) == {"1", "2"}  # "beagle" only in message 1
    assert len(floor.rank("pixel", 1)) == 1  # at most k
    assert floor.rank("zzzxqv", 10) == [] and MessageBm25([]).rank("pixel", 5) == []


def test_the_marker_is_stripped_before_indexing() -> None:
    # "->-> 1,1" is bookkeeping: its digits are no words of the message.
    assert MessageBm25(MESSAGES).rank("1", 5) == []


def test_floor_metrics_take_the_first_k_messages() -> None:
    got = floor_metrics(["9", "3", "7", "2"], ["3", "2"], ks=(1, 2, 10))
    assert got == {
        "bm25_recall@1msg": 0.0,
        "bm25_any@1msg": 0.0,
        "bm25_recall@2msg": 0.5,
        "bm25_any@2msg": 1.0,
        "bm25_recall@10msg": 1.0,
        "bm25_any@10msg": 1.0,
    }
    assert floor_metrics(["1"], [], ks=(5,)) == {}  # abstention: no figures


def _result(recall: float, floor: float) -> RunResult:
    return RunResult.model_validate(
        {
            "benchmark": "beam",
            "manifest": {},
            "categories": {"summarization": {"recall@10msg": recall, "n": 2.0}},
            "overall": {"recall@10msg": recall, "bm25_recall@10msg": floor, "n": 2.0},
            "notes": {"macro": {"recall@10msg": recall}},
        }
    )


def test_compare_tables_put_the_floor_beside_the_configs() -> None:
    results = {"bm25": _result(0.25, 0.5), "default": _result(0.75, 0.5)}
    overall = overall_markdown(results, (10,))
    assert "| BM25 floor | 0.500 | 2 |" in overall and "| default | 0.750 | 2 |" in overall
    table = side_by_side_markdown(results, ["recall@10msg", "hits@10msg"], ["summarization"])
    assert "| ability | bm25 | default | BM25 floor |" in table
    assert "| overall | 0.250 | 0.750 | 0.500 |" in table
    assert "| ability | bm25 | default |\n" in table  # hits: the floor has no such figure
