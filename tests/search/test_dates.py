"""Date phrases in a question -> day spans relative to ``as_of`` (reme_core.search.dates)."""

from __future__ import annotations

import datetime as dt

import pytest

from reme_core.errors import SearchError
from reme_core.search.dates import DateSpan, closeness, date_boost, parse_as_of, resolve

D = dt.date
WED = D(2024, 5, 15)  # a Wednesday
SAT = D(2024, 5, 18)
JAN = D(2024, 1, 10)

# (question, as_of, [(start, end, phrase), ...])
CASES = [
    # absolute days, in the forms LoCoMo and REALTALK questions use
    ("What painting did she show on October 13, 2023?", WED, [(D(2023, 10, 13), D(2023, 10, 13), "October 13, 2023")]),
    ("What did Gina find on 1 February, 2023?", WED, [(D(2023, 2, 1), D(2023, 2, 1), "1 February, 2023")]),
    ("What did Elise buy on 7 Jan 2024?", WED, [(D(2024, 1, 7), D(2024, 1, 7), "7 Jan 2024")]),
    ("accepted on May 23, 2023", WED, [(D(2023, 5, 23), D(2023, 5, 23), "May 23, 2023")]),
    ("the 3rd of March 2022", WED, [(D(2022, 3, 3), D(2022, 3, 3), "3rd of March 2022")]),
    ("logged 2023-05-08", WED, [(D(2023, 5, 8), D(2023, 5, 8), "2023-05-08")]),
    ("logged 2023/05/08", WED, [(D(2023, 5, 8), D(2023, 5, 8), "2023/05/08")]),
    # a day without a year: the latest one not after as_of
    ("on 5 January", WED, [(D(2024, 1, 5), D(2024, 1, 5), "5 January")]),
    ("on December 24", WED, [(D(2023, 12, 24), D(2023, 12, 24), "December 24")]),
    # months and years
    ("in May 2023", WED, [(D(2023, 5, 1), D(2023, 5, 31), "May 2023")]),
    ("in July, 2023", WED, [(D(2023, 7, 1), D(2023, 7, 31), "July, 2023")]),
    ("camping in June", WED, [(D(2023, 6, 1), D(2023, 6, 30), "in June")]),
    ("camping in May", WED, [(D(2024, 5, 1), D(2024, 5, 31), "in May")]),
    ("in February", D(2024, 2, 29), [(D(2024, 2, 1), D(2024, 2, 29), "in February")]),
    ("the beach in 2023", WED, [(D(2023, 1, 1), D(2023, 12, 31), "in 2023")]),
    # seasons (meteorological; winter runs into the next year)
    ("winter 2021 - 2022", WED, [(D(2021, 12, 1), D(2022, 2, 28), "winter 2021")]),
    ("the spring of 2024", WED, [(D(2024, 3, 1), D(2024, 5, 31), "spring of 2024")]),
    ("last summer", WED, [(D(2023, 6, 1), D(2023, 8, 31), "last summer")]),
    ("this winter", JAN, [(D(2023, 12, 1), D(2024, 2, 29), "winter")]),
    # relative days, weeks, months, years
    ("yesterday", WED, [(D(2024, 5, 14), D(2024, 5, 14), "yesterday")]),
    ("today", WED, [(WED, WED, "today")]),
    ("the day before yesterday", WED, [(D(2024, 5, 13), D(2024, 5, 13), "the day before yesterday")]),
    ("last Saturday", WED, [(D(2024, 5, 11), D(2024, 5, 11), "last Saturday")]),
    ("last Saturday", SAT, [(D(2024, 5, 11), D(2024, 5, 11), "last Saturday")]),
    ("on Monday", WED, [(D(2024, 5, 13), D(2024, 5, 13), "on Monday")]),
    ("last weekend", WED, [(D(2024, 5, 11), D(2024, 5, 12), "last weekend")]),
    ("last weekend", SAT, [(D(2024, 5, 11), D(2024, 5, 12), "last weekend")]),
    ("last week", WED, [(D(2024, 5, 6), D(2024, 5, 12), "last week")]),
    ("this week", WED, [(D(2024, 5, 13), D(2024, 5, 19), "this week")]),
    ("last month", WED, [(D(2024, 4, 1), D(2024, 4, 30), "last month")]),
    ("last month", JAN, [(D(2023, 12, 1), D(2023, 12, 31), "last month")]),
    ("last year", WED, [(D(2023, 1, 1), D(2023, 12, 31), "last year")]),
    ("3 days ago", WED, [(D(2024, 5, 12), D(2024, 5, 12), "3 days ago")]),
    ("two weeks ago", WED, [(D(2024, 4, 28), D(2024, 5, 4), "two weeks ago")]),
    ("a month ago", WED, [(D(2024, 4, 1), D(2024, 4, 30), "a month ago")]),
    ("a couple of months ago", WED, [(D(2024, 2, 1), D(2024, 4, 30), "a couple of months ago")]),
    ("4 years ago", WED, [(D(2020, 1, 1), D(2020, 12, 31), "4 years ago")]),
    ("a few years ago", WED, [(D(2020, 1, 1), D(2022, 12, 31), "a few years ago")]),
    ("in the past 3 days", WED, [(D(2024, 5, 12), WED, "in the past 3 days")]),
    ("the last two weeks", WED, [(D(2024, 5, 1), WED, "the last two weeks")]),
    # several phrases, in question order; nothing resolved twice
    (
        "between May 2023 and 3 days ago",
        WED,
        [(D(2023, 5, 1), D(2023, 5, 31), "May 2023"), (D(2024, 5, 12), D(2024, 5, 12), "3 days ago")],
    ),
    # a list of months; "the past month" counts back from as_of, "last month" is the calendar one
    (
        "the two novels I finished in January and March",
        D(2023, 5, 30),
        [(D(2023, 1, 1), D(2023, 1, 31), "in January"), (D(2023, 3, 1), D(2023, 3, 31), "and March")],
    ),
    ("in May or June", WED, [(D(2024, 5, 1), D(2024, 5, 31), "in May"), (D(2023, 6, 1), D(2023, 6, 30), "or June")]),
    ("Tom and May went hiking", WED, []),
    ("followers over the past month", D(2023, 5, 30), [(D(2023, 4, 30), D(2023, 5, 30), "past month")]),
    ("this past week", WED, [(D(2024, 5, 8), WED, "past week")]),
    # no date: a modal "may", a number that is no year, plain words
    ("what may happen next", WED, []),
    ("she ran 3000 meters", WED, []),
    ("what did Caroline realize after the charity race?", WED, []),
    # an impossible day falls back to the month it names
    ("on 30 February 2023", WED, [(D(2023, 2, 1), D(2023, 2, 28), "February 2023")]),
]  # fmt: skip


@pytest.mark.parametrize(("question", "as_of", "expected"), CASES)
def test_resolve(question: str, as_of: dt.date, expected: list) -> None:
    got = [(s.start, s.end, s.phrase) for s in resolve(question, as_of)]
    assert got == expected


@pytest.mark.parametrize(
    ("value", "day"),
    [
        ("2024-05-15", WED),
        (" 2024-05-15 ", WED),
        ("2024-05-15T23:40:00", WED),
        ("2023/05/30 (Tue) 23:40", D(2023, 5, 30)),  # LongMemEval's question_date
        (WED, WED),
        (dt.datetime(2024, 5, 15, 9, 30), WED),
    ],
)
def test_parse_as_of(value: object, day: dt.date) -> None:
    assert parse_as_of(value) == day  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["", "yesterday", "2024-02-30", "2024-13-01", "15/05/2024", "2024"])
def test_bad_as_of_is_refused_with_the_value(bad: str) -> None:
    with pytest.raises(SearchError, match="as_of must be a date as YYYY-MM-DD") as info:
        parse_as_of(bad)
    assert repr(bad) in str(info.value)


def test_closeness_inside_near_and_far() -> None:
    spans = [DateSpan(D(2024, 5, 10), D(2024, 5, 12), "x")]
    assert closeness(D(2024, 5, 11), spans, 0) == 1.0
    assert closeness(D(2024, 5, 13), spans, 0) == 0.0
    assert closeness(D(2024, 5, 13), spans, 3) == pytest.approx(0.75)
    assert closeness(D(2024, 5, 6), spans, 3) == 0.0
    assert closeness(None, spans, 3) == 0.0
    assert closeness(D(2024, 5, 11), [], 3) == 0.0


def test_date_boost_moves_dated_hits_up_and_keeps_the_scale() -> None:
    days = {"a": D(2024, 1, 1), "b": D(2024, 5, 11), "c": None}
    spans = resolve("last Saturday", WED)
    scored = [("a", 1.0), ("c", 0.9), ("b", 0.7)]
    boosted = date_boost(scored, spans, days.__getitem__, 0.3)
    assert [item for item, _ in boosted] == ["b", "a", "c"]
    assert all(0.0 <= s <= 1.0 for _, s in boosted)
    assert boosted[0][1] == pytest.approx(0.7 * 0.7 + 0.3)
    # a small weight leaves a clear keyword winner first
    assert date_boost(scored, spans, days.__getitem__, 0.1)[0][0] == "a"


def test_date_boost_without_spans_or_weight_changes_nothing() -> None:
    scored = [("a", 1.0), ("b", 0.5)]
    assert date_boost(scored, [], lambda _: WED, 0.5) == scored
    assert date_boost(scored, resolve("yesterday", WED), lambda _: WED, 0.0) == scored
