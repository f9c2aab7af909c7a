"""check_context: where an over-budget message list is cut, on ordinary and adversarial input."""

from __future__ import annotations

import pytest

from reme_core.light import ContextError, TokenCounter, check_context
from reme_core.light.messages import cut_points
from tests.light.msgs import assistant, tool, user


def turn(n: int, words: int = 200) -> list[dict]:
    return [user(f"question {n} " + "word " * words), assistant(f"answer {n} " + "word " * words)]


def test_under_the_threshold_nothing_is_compacted(counter: TokenCounter):
    messages = turn(1) + turn(2)
    to_compact, to_keep, is_valid = check_context(messages, 100_000, 50, counter)
    assert (to_compact, is_valid) == ([], True)
    assert to_keep == messages


def test_empty_input_is_valid_and_empty(counter: TokenCounter):
    split = check_context([], 10, 5, counter)
    assert (split.to_compact, split.to_keep, split.is_valid) == ([], [], True)


def test_cut_at_the_start_of_a_user_turn_keeping_at_most_the_reserve(counter: TokenCounter):
    messages = [m for n in range(6) for m in turn(n)]
    per_turn = counter.messages(turn(0))
    split = check_context(
        messages, threshold=3 * per_turn, reserve=int(2.5 * per_turn), counter=counter
    )
    assert split.is_valid
    assert split.to_keep == messages[8:]  # the last two turns; a third would pass the reserve
    assert split.to_compact == messages[:8]
    assert split.keep_tokens <= 2.5 * per_turn
    assert split.to_keep[0]["role"] == "user"


def test_a_tool_call_at_the_boundary_stays_with_its_results(counter: TokenCounter):
    loop = [
        user("fix the failing build"),
        assistant(None, [("a", "run_tests")]),
        tool("a", "FAILED " * 300),
        assistant(None, [("b", "read_file"), ("c", "grep")]),
        tool("b", "content " * 300),
        tool("c", "matches " * 300),
        assistant("The build is fixed."),
    ]
    sizes = [counter.message(m) for m in loop]
    # A reserve that would fit tool c's result and the answer, but not call b+c with both results.
    reserve = sizes[5] + sizes[6] + 5
    split = check_context(loop, threshold=sum(sizes) - 1, reserve=reserve, counter=counter)
    assert split.is_valid
    assert split.to_keep == loop[6:]
    kept_results = {m["tool_call_id"] for m in split.to_keep if m["role"] == "tool"}
    assert kept_results == set()
    # With room for the second round, the cut lands before the call, never between it and results.
    bigger = check_context(loop, sum(sizes) - 1, sum(sizes[3:]) + 5, counter)
    assert bigger.to_keep == loop[3:]


def test_never_cuts_between_a_user_message_and_its_reply(counter: TokenCounter):
    messages = [user("short question"), assistant("a very long answer " * 400)]
    split = check_context(
        messages, threshold=50, reserve=counter.message(messages[1]) + 10, counter=counter
    )
    assert split.is_valid is False
    assert split.to_compact == [] and split.to_keep == messages
    assert "reserve" in split.reason


def test_a_single_huge_message_has_no_valid_cut(counter: TokenCounter):
    huge = [user("paste " * 5000)]
    to_compact, to_keep, is_valid = check_context(huge, 1000, 500, counter)
    assert (to_compact, to_keep, is_valid) == ([], huge, False)


def test_a_huge_latest_turn_after_older_ones_is_reported_not_cut(counter: TokenCounter):
    messages = [*turn(1), user("paste " * 5000)]
    split = check_context(messages, 1000, 500, counter)
    assert not split.is_valid and split.to_compact == []


def test_leading_system_messages_are_kept_and_not_counted_in_the_reserve(counter: TokenCounter):
    system = {"role": "system", "content": "rules " * 300}
    messages = [system] + [m for n in range(4) for m in turn(n)]
    per_turn = counter.messages(turn(0))
    split = check_context(messages, threshold=2 * per_turn, reserve=per_turn + 5, counter=counter)
    assert split.to_keep[0] is not None and split.to_keep[0]["content"] == system["content"]
    assert split.to_keep[1:] == messages[-2:]
    assert all(m["role"] != "system" for m in split.to_compact)


def test_inside_a_long_tool_loop_the_cut_falls_between_rounds(counter: TokenCounter):
    loop = [user("refactor the module")]
    for n in range(8):
        loop += [assistant(None, [(f"c{n}", "edit")]), tool(f"c{n}", "diff " * 200)]
    loop.append(assistant("done"))
    round_tokens = counter.messages(loop[1:3])
    split = check_context(
        loop, threshold=round_tokens * 3, reserve=round_tokens * 2 + 20, counter=counter
    )
    assert split.is_valid
    assert split.to_keep[0]["role"] == "assistant" and split.to_keep[0].get("tool_calls")
    answered = {m["tool_call_id"] for m in split.to_keep if m["role"] == "tool"}
    called = {c["id"] for m in split.to_keep for c in m.get("tool_calls") or []}
    assert answered <= called


def test_results_unpack_and_the_callers_list_is_untouched(counter: TokenCounter):
    messages = [m for n in range(4) for m in turn(n)]
    before = [dict(m) for m in messages]
    per_turn = counter.messages(turn(0))
    # A reserve above the threshold is capped at it: what is kept must fit the threshold.
    split = check_context(messages, int(1.5 * per_turn), 100 * per_turn, counter)
    assert messages == before
    to_compact, to_keep, is_valid = split
    assert is_valid and to_keep == messages[-2:] and to_compact == messages[:-2]
    assert split.keep_tokens <= 1.5 * per_turn


def test_cut_points_reject_a_position_before_a_result_or_inside_a_round():
    messages = [
        user("q"),
        assistant(None, [("x", "t"), ("y", "t")]),
        tool("x", "1"),
        assistant("thinking"),  # results may arrive after other text
        tool("y", "2"),
        user("next"),
    ]
    ok = cut_points(messages)
    assert [i for i in range(1, len(messages)) if ok[i]] == [1, 5]


@pytest.mark.parametrize(
    ("messages", "error"),
    [
        ("not a list", "must be a list"),
        ([{"role": "robot", "content": "x"}], r"messages\[0\]\.role"),
        ([{"role": "tool", "content": "x"}], "tool_call_id"),
        ([{"role": "user", "content": "x", "tool_calls": [{"id": "a"}]}], "only assistant"),
    ],
)
def test_bad_messages_are_a_clear_error(counter: TokenCounter, messages: object, error: str):
    with pytest.raises(ContextError, match=error):
        check_context(messages, 10, 5, counter)  # type: ignore[arg-type]


def test_bad_budgets_are_refused(counter: TokenCounter):
    with pytest.raises(ContextError, match="threshold"):
        check_context([], 0, 5, counter)
    with pytest.raises(ContextError, match="reserve"):
        check_context([], 10, -1, counter)
