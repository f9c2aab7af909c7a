"""Dates named in a question, resolved to day ranges relative to the day it is asked (``as_of``).

"What did Melanie paint in July 2023?", "where was I last Saturday?", "the talk two weeks ago":
notes carry their day (frontmatter ``date``), so a ranking can prefer the notes of the day or
days the question names. ``resolve`` finds such phrases and turns each into an inclusive
``DateSpan``; ``date_boost`` moves fused hits dated inside (or near) a span up. Phrases that do
not make a real day ("30 February 2023") are ignored: a question is free text, not input to
refuse. A bad ``as_of`` is refused (``parse_as_of``).

Conventions, chosen for conversational memory: a month or a day without a year is the most
recent one not after ``as_of`` ("in June" asked in May 2024 is June 2023); weeks start on Monday;
"last week|month|year" is the calendar one before ``as_of``'s, "the past week|month|year" the
days up to ``as_of``; "last Saturday" is the latest Saturday before ``as_of``; "N weeks ago" is the week around that day
(three days either side), "N months ago" that calendar month, "N years ago" that year; "a few" is
three and "a couple of" two, with a span one unit wider each side; seasons are meteorological
(northern hemisphere; winter 2023 starts in December 2023).
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from reme_core.errors import SearchError
from reme_core.schema.chunk import chunk_path
from reme_core.search.fusion import Fused

MONTHS = {
    name: number
    for number in range(1, 13)
    for name in (calendar.month_name[number].lower(), calendar.month_abbr[number].lower())
}
MONTHS["sept"] = 9
WEEKDAYS = {calendar.day_name[n].lower(): n for n in range(7)}
NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "a couple of": 2, "a few": 3, "several": 3,
}  # fmt: skip
FUZZY = {"a couple of", "a few", "several"}
SEASONS = {
    "spring": (3, 5),
    "summer": (6, 8),
    "autumn": (9, 11),
    "fall": (9, 11),
    "winter": (12, 2),
}

_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_COUNT = r"(?P<count>\d+|" + "|".join(sorted(NUMBERS, key=len, reverse=True)) + r")"
_UNIT = r"(?P<unit>day|week|month|year)s?"
_WEEKDAY = r"(?P<weekday>" + "|".join(WEEKDAYS) + r")"
_SEASON = r"(?P<season>" + "|".join(SEASONS) + r")"
_CAPITALISED = "|".join(sorted((m.capitalize() for m in MONTHS), key=len, reverse=True))


@dataclass(frozen=True)
class DateSpan:
    """Days ``start`` to ``end``, both included, that ``phrase`` in the question names."""

    start: dt.date
    end: dt.date
    phrase: str

    def distance(self, day: dt.date) -> int:
        """Days from ``day`` to the span (0 inside it)."""
        if day < self.start:
            return (self.start - day).days
        return max(0, (day - self.end).days)


def parse_as_of(value: str | dt.date | dt.datetime) -> dt.date:
    """The day a question is asked: a date, or ``YYYY-MM-DD`` (or ``YYYY/MM/DD``; whatever follows
    the day, such as a time, is dropped)."""
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    # LongMemEval writes "2023/05/30 (Tue) 23:40": the day is the first ten characters.
    text = value.strip()[:10].replace("/", "-")
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise SearchError(f"as_of must be a date as YYYY-MM-DD, got {value!r}") from None


def _day(year: int, month: int, day: int) -> dt.date | None:
    try:
        return dt.date(year, month, day)
    except ValueError:
        return None


def _month_span(year: int, month: int) -> tuple[dt.date, dt.date]:
    return dt.date(year, month, 1), dt.date(year, month, calendar.monthrange(year, month)[1])


def _add_months(day: dt.date, months: int) -> tuple[int, int]:
    index = day.year * 12 + day.month - 1 + months
    return index // 12, index % 12 + 1


def _latest_month(month: int, as_of: dt.date) -> int:
    """The year of the most recent ``month`` that has begun by ``as_of``."""
    return as_of.year if month <= as_of.month else as_of.year - 1


def _full_date(m: re.Match[str], as_of: dt.date) -> tuple[dt.date, dt.date] | None:
    month = MONTHS[m.group("month").lower()]
    day = int(m.group("day"))
    if m.groupdict().get("year"):
        found = _day(int(m.group("year")), month, day)
    else:
        found = _day(as_of.year, month, day)
        if found is not None and found > as_of:
            found = _day(as_of.year - 1, month, day)
    return (found, found) if found else None


def _iso(m: re.Match[str], as_of: dt.date) -> tuple[dt.date, dt.date] | None:
    found = _day(int(m.group("year")), int(m.group("m")), int(m.group("d")))
    return (found, found) if found else None


def _month_year(m: re.Match[str], as_of: dt.date) -> tuple[dt.date, dt.date]:
    month = MONTHS[m.group("month").lower()]
    given = m.groupdict().get("year")
    year = int(given) if given else _latest_month(month, as_of)
    return _month_span(year, month)


def _listed_month(m: re.Match[str], as_of: dt.date) -> tuple[dt.date, dt.date] | None:
    """``and March`` only right after another month ("January and March", not "Tom and May")."""
    before = m.string[: m.start()].split()
    if not before or before[-1].lower().rstrip(".,") not in MONTHS:
        return None
    return _month_year(m, as_of)


def _year(m: re.Match[str], as_of: dt.date) -> tuple[dt.date, dt.date]:
    year = int(m.group("year"))
    return dt.date(year, 1, 1), dt.date(year, 12, 31)


def _season(m: re.Match[str], as_of: dt.date) -> tuple[dt.date, dt.date]:
    first, last = SEASONS[m.group("season").lower()]

    def span(year: int) -> tuple[dt.date, dt.date]:
        return dt.date(year, first, 1), _month_span(year + 1 if last < first else year, last)[1]

    if m.groupdict().get("year"):
        return span(int(m.group("year")))
    # "summer": the latest one that has begun; "last summer": the latest one that is over.
    year = as_of.year if dt.date(as_of.year, first, 1) <= as_of else as_of.year - 1
    if m.group(0).lower().startswith(("last", "this past")) and span(year)[1] >= as_of:
        year -= 1
    return span(year)


def _relative_day(m: re.Match[str], as_of: dt.date) -> tuple[dt.date, dt.date]:
    word = m.group(0).lower()
    offset = {"today": 0, "tonight": 0, "yesterday": -1, "tomorrow": 1}.get(word, -2)
    day = as_of + dt.timedelta(days=offset)
    return day, day


def _last_weekday(m: re.Match[str], as_of: dt.date) -> tuple[dt.date, dt.date]:
    back = (as_of.weekday() - WEEKDAYS[m.group("weekday").lower()]) % 7 or 7
    day = as_of - dt.timedelta(days=back)
    return day, day


def _last_weekend(m: re.Match[str], as_of: dt.date) -> tuple[dt.date, dt.date]:
    sunday = as_of - dt.timedelta(days=(as_of.weekday() + 1) % 7 or 7)
    return sunday - dt.timedelta(days=1), sunday


def _this_last(m: re.Match[str], as_of: dt.date) -> tuple[dt.date, dt.date]:
    last = m.group("which").lower() != "this"
    unit = m.group("unit").lower()
    if unit == "week":
        monday = as_of - dt.timedelta(days=as_of.weekday() + (7 if last else 0))
        return monday, monday + dt.timedelta(days=6)
    if unit == "month":
        return _month_span(*_add_months(as_of, -1 if last else 0))
    year = as_of.year - (1 if last else 0)
    return dt.date(year, 1, 1), dt.date(year, 12, 31)


def _count(m: re.Match[str]) -> tuple[int, bool]:
    raw = " ".join(m.group("count").lower().split())
    return (int(raw), False) if raw.isdigit() else (NUMBERS[raw], raw in FUZZY)


def _ago(m: re.Match[str], as_of: dt.date) -> tuple[dt.date, dt.date] | None:
    count, fuzzy = _count(m)
    unit, wide = m.group("unit").lower(), 1 if fuzzy else 0
    if unit == "day":
        day = as_of - dt.timedelta(days=count)
        return day - dt.timedelta(days=wide), day + dt.timedelta(days=wide)
    if unit == "week":
        day = as_of - dt.timedelta(weeks=count)
        return day - dt.timedelta(days=3 + 7 * wide), day + dt.timedelta(days=3 + 7 * wide)
    if unit == "month":
        first = _month_span(*_add_months(as_of, -count - wide))[0]
        return first, _month_span(*_add_months(as_of, -count + wide))[1]
    if as_of.year - count - wide < 1:
        return None
    return dt.date(as_of.year - count - wide, 1, 1), dt.date(as_of.year - count + wide, 12, 31)


def _past(m: re.Match[str], as_of: dt.date) -> tuple[dt.date, dt.date]:
    count = _count(m)[0] if m.groupdict().get("count") else 1  # "the past month": one
    unit = m.group("unit").lower()
    if unit in ("day", "week"):
        return as_of - dt.timedelta(days=count * (7 if unit == "week" else 1)), as_of
    if unit == "month":
        year, month = _add_months(as_of, -count)
        return dt.date(year, month, min(as_of.day, calendar.monthrange(year, month)[1])), as_of
    return dt.date(as_of.year - count, as_of.month, min(as_of.day, 28)), as_of


Resolver = Callable[[re.Match[str], dt.date], tuple[dt.date, dt.date] | None]
# Longest, most specific forms first: a span of the question already taken is not matched again,
# so "13 October 2023" is one day, not also the month and the year.
PATTERNS: list[tuple[re.Pattern[str], Resolver]] = [
    (re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?(?:\s+{_YEAR})?\b", re.I), _full_date),
    (re.compile(rf"\b{_MONTH}\s+{_DAY}(?:,?\s+{_YEAR})?\b", re.I), _full_date),
    (re.compile(rf"\b{_YEAR}[-/](?P<m>[01]?\d)[-/](?P<d>[0-3]?\d)\b"), _iso),
    (re.compile(rf"\b(?:(?:last|this past)\s+)?{_SEASON}(?:\s+(?:of\s+)?{_YEAR})?\b", re.I), _season),
    (re.compile(rf"\b{_MONTH}(?:,?\s+(?:of\s+)?{_YEAR})\b", re.I), _month_year),
    (re.compile(rf"\b(?:in|during|since|last|this past|early|late|mid)[\s-]+{_MONTH}\b", re.I), _month_year),
    # "in January and March": the next month of a list (capitalised, so "and may" is a verb)
    (re.compile(rf"(?<=\s)(?:and|or|&)\s+(?P<month>{_CAPITALISED})\b"), _listed_month),
    (re.compile(rf"\b(?:in|during|of|since)\s+{_YEAR}\b", re.I), _year),
    (re.compile(r"\b(?:the day before yesterday|yesterday|today|tonight|tomorrow)\b", re.I), _relative_day),
    (re.compile(rf"\b(?:last|this past|on)\s+{_WEEKDAY}\b", re.I), _last_weekday),
    (re.compile(r"\b(?:last|this past)\s+weekend\b", re.I), _last_weekend),
    (re.compile(r"\b(?P<which>this|last)\s+(?P<unit>week|month|year)\b", re.I), _this_last),
    (re.compile(r"\bpast\s+(?P<unit>week|month|year)\b", re.I), _past),
    (re.compile(rf"\b{_COUNT}\s+{_UNIT}\s+ago\b", re.I), _ago),
    (re.compile(rf"\b(?:in\s+)?the\s+(?:last|past)\s+{_COUNT}\s+{_UNIT}\b", re.I), _past),
]  # fmt: skip


def resolve(query: str, as_of: dt.date) -> list[DateSpan]:
    """The date phrases of ``query`` as day spans relative to ``as_of``, in question order."""
    taken: list[tuple[int, int]] = []
    found: list[tuple[int, DateSpan]] = []
    for pattern, resolver in PATTERNS:
        for m in pattern.finditer(query):
            if any(m.start() < end and start < m.end() for start, end in taken):
                continue
            span = resolver(m, as_of)
            if span is None:
                continue
            taken.append((m.start(), m.end()))
            found.append((m.start(), DateSpan(span[0], span[1], m.group(0))))
    return [span for _, span in sorted(found, key=lambda item: item[0])]


def closeness(day: dt.date | None, spans: Sequence[DateSpan], slack_days: int) -> float:
    """1 inside a span, falling linearly to 0 at ``slack_days`` outside the nearest; 0 undated."""
    if day is None or not spans:
        return 0.0
    distance = min(span.distance(day) for span in spans)
    if distance == 0:
        return 1.0
    return max(0.0, 1.0 - distance / (slack_days + 1)) if slack_days > 0 else 0.0


def date_boost(
    scored: Sequence[tuple[str, float]],
    spans: Sequence[DateSpan],
    date_of: Callable[[str], dt.date | None],
    weight: float,
    slack_days: int = 0,
) -> list[tuple[str, float]]:
    """``(id, score)`` reordered by ``(1 - weight) * score + weight * closeness``, best first.

    Scores stay within 0..1 (the fused scale, so ``min_score`` keeps its meaning); ties keep the
    given order. No span or a zero weight returns the ranking unchanged.
    """
    if not spans or weight <= 0:
        return list(scored)
    rescored = [
        (item, (1.0 - weight) * score + weight * closeness(date_of(item), spans, slack_days))
        for item, score in scored
    ]
    return sorted(rescored, key=lambda pair: -pair[1])


def rank_by_dates(
    query: str,
    fused: list[Fused],
    as_of: dt.date | None,
    weight: float,
    slack_days: int,
    note_dates: Callable[[Iterable[str]], Mapping[str, dt.date | None]],
) -> list[Fused]:
    """The engine's date lever (``search.date_boost``): ``fused`` reordered by ``date_boost``
    when ``query`` names a date (relative to ``as_of``, today when not given); unchanged, with
    no catalog read, when it names none. ``note_dates`` maps note paths to their days."""
    if weight <= 0 or not fused:
        return fused
    spans = resolve(query, as_of or dt.date.today())
    if not spans:
        return fused
    days = note_dates({chunk_path(f.chunk_id) for f in fused})
    by_id = {f.chunk_id: f for f in fused}
    boosted = date_boost(
        [(f.chunk_id, f.score) for f in fused],
        spans,
        lambda chunk_id: days.get(chunk_path(chunk_id)),
        weight,
        slack_days,
    )
    out = []
    for chunk_id, score in boosted:
        entry = by_id[chunk_id]
        out.append(Fused(chunk_id, score, entry.ranks))
    return out
