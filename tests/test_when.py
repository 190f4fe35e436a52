"""The time a recall question is about (``memledger.read.when``).

``NOW`` is Friday 2023-10-20 15:00 UTC, inside the span of the LoCoMo
conversations (2022 to 2024); its Monday-based week starts on 2023-10-16.
"""

from __future__ import annotations

import math
from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memledger.errors import InvalidQueryError
from memledger.read.when import Precision, TimeFocus, question_time, time_boost

FAST = settings(max_examples=300, deadline=None)
NOW = datetime(2023, 10, 20, 15, 0, tzinfo=UTC)


def day(year: int, month: int, dom: int) -> datetime:
    return datetime(year, month, dom, tzinfo=UTC)


def resolved(question: str, now: datetime = NOW) -> TimeFocus:
    focus = question_time(question, now)
    assert focus is not None, question
    return focus


# -- the benchmark's questions -------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "start", "end", "phrase", "precision"),
    [
        (
            "What painting did Melanie show to Caroline on October 13, 2023?",
            day(2023, 10, 13),
            day(2023, 10, 14),
            "October 13, 2023",
            "day",
        ),
        (
            "Where did Joanna travel to in July 2022?",
            day(2022, 7, 1),
            day(2022, 8, 1),
            "July 2022",
            "month",
        ),
        (
            "What type of workout class did Maria start doing in December 2023?",
            day(2023, 12, 1),
            day(2024, 1, 1),
            "December 2023",
            "month",
        ),
        (
            "When did Melanie go camping in June?",
            day(2023, 6, 1),
            day(2023, 7, 1),
            "June",
            "month",
        ),
        (
            "What did Melanie and her family see during their camping trip last year?",
            day(2022, 1, 1),
            day(2023, 1, 1),
            "last year",
            "year",
        ),
        (
            "What state did Joanna visit in summer 2021?",
            day(2021, 6, 1),
            day(2021, 9, 1),
            "summer 2021",
            "season",
        ),
        (
            "What movie did Joanna watch on 1 May, 2022?",
            day(2022, 5, 1),
            day(2022, 5, 2),
            "1 May, 2022",
            "day",
        ),
        (
            "What did John's teammates give him when they met on Aug 15th?",
            day(2023, 8, 15),
            day(2023, 8, 16),
            "Aug 15th",
            "day",
        ),
        (
            "Where did Caroline move from 4 years ago?",
            day(2019, 1, 1),
            day(2020, 1, 1),
            "4 years ago",
            "year",
        ),
        ("What did she do last May?", day(2023, 5, 1), day(2023, 6, 1), "last May", "month"),
        ("two weeks ago", day(2023, 10, 2), day(2023, 10, 9), "two weeks ago", "week"),
        ("last week", day(2023, 10, 9), day(2023, 10, 16), "last week", "week"),
        ("yesterday", day(2023, 10, 19), day(2023, 10, 20), "yesterday", "day"),
        ("in 2022", day(2022, 1, 1), day(2023, 1, 1), "2022", "year"),
        (
            "the week of 23 August 2023",
            day(2023, 8, 21),
            day(2023, 8, 28),
            "the week of 23 August 2023",
            "week",
        ),
        (
            "How many times has Melanie gone to the beach in 2023?",
            day(2023, 1, 1),
            day(2024, 1, 1),
            "2023",
            "year",
        ),
    ],
)
def test_benchmark_questions(
    question: str, start: datetime, end: datetime, phrase: str, precision: Precision
) -> None:
    assert resolved(question) == TimeFocus(start, end, phrase, precision)


# -- more of the grammar -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "start", "end", "precision"),
    [
        ("What did she buy on Oct. 13 2023?", day(2023, 10, 13), day(2023, 10, 14), "day"),
        ("on the 1st of May 2022", day(2022, 5, 1), day(2022, 5, 2), "day"),
        ("on 2022-02-28", day(2022, 2, 28), day(2022, 3, 1), "day"),
        ("on may 5", day(2023, 5, 5), day(2023, 5, 6), "day"),
        ("today", day(2023, 10, 20), day(2023, 10, 21), "day"),
        ("What did he cook last night?", day(2023, 10, 19), day(2023, 10, 20), "day"),
        ("the day before yesterday", day(2023, 10, 18), day(2023, 10, 19), "day"),
        ("What did she do on Friday?", day(2023, 10, 20), day(2023, 10, 21), "day"),
        ("last Friday", day(2023, 10, 13), day(2023, 10, 14), "day"),
        ("last Monday", day(2023, 10, 16), day(2023, 10, 17), "day"),
        ("three days ago", day(2023, 10, 17), day(2023, 10, 18), "day"),
        ("this week", day(2023, 10, 16), day(2023, 10, 23), "week"),
        ("this past week", day(2023, 10, 9), day(2023, 10, 16), "week"),
        ("a week ago", day(2023, 10, 9), day(2023, 10, 16), "week"),
        ("a couple of weeks ago", day(2023, 10, 2), day(2023, 10, 9), "week"),
        ("last weekend", day(2023, 10, 14), day(2023, 10, 16), "week"),
        ("the week of August 23", day(2023, 8, 21), day(2023, 8, 28), "week"),
        ("May of 2022", day(2022, 5, 1), day(2022, 6, 1), "month"),
        ("in early June", day(2023, 6, 1), day(2023, 7, 1), "month"),
        ("mid-May", day(2023, 5, 1), day(2023, 6, 1), "month"),
        ("the first week of May", day(2023, 5, 1), day(2023, 6, 1), "month"),
        ("in June last year", day(2022, 6, 1), day(2022, 7, 1), "month"),
        ("in November", day(2022, 11, 1), day(2022, 12, 1), "month"),
        ("this May", day(2023, 5, 1), day(2023, 6, 1), "month"),
        ("next May", day(2024, 5, 1), day(2024, 6, 1), "month"),
        ("last October", day(2022, 10, 1), day(2022, 11, 1), "month"),
        ("last month", day(2023, 9, 1), day(2023, 10, 1), "month"),
        ("eleven months ago", day(2022, 11, 1), day(2022, 12, 1), "month"),
        ("the summer of 2021", day(2021, 6, 1), day(2021, 9, 1), "season"),
        ("in winter 2022", day(2021, 12, 1), day(2022, 3, 1), "season"),
        ("during the summer", day(2023, 6, 1), day(2023, 9, 1), "season"),
        ("in the winter", day(2022, 12, 1), day(2023, 3, 1), "season"),
        ("What did she do this fall?", day(2023, 9, 1), day(2023, 12, 1), "season"),
        ("last summer", day(2023, 6, 1), day(2023, 9, 1), "season"),
        ("last fall", day(2022, 9, 1), day(2022, 12, 1), "season"),
        ("this winter", day(2023, 12, 1), day(2024, 3, 1), "season"),
        ("next spring", day(2024, 3, 1), day(2024, 6, 1), "season"),
        ("in the autumn of last year", day(2022, 9, 1), day(2022, 12, 1), "season"),
        ("this year", day(2023, 1, 1), day(2024, 1, 1), "year"),
        ("a year ago", day(2022, 1, 1), day(2023, 1, 1), "year"),
        ("12 years ago", day(2011, 1, 1), day(2012, 1, 1), "year"),
        ("since June", day(2023, 6, 1), day(2023, 10, 21), "month"),
        ("ever since last year", day(2022, 1, 1), day(2023, 10, 21), "year"),
        ("since early 2022", day(2022, 1, 1), day(2023, 10, 21), "year"),
    ],
)
def test_grammar(question: str, start: datetime, end: datetime, precision: Precision) -> None:
    focus = resolved(question)
    assert (focus.start, focus.end, focus.precision) == (start, end, precision)


@pytest.mark.parametrize(
    ("question", "now", "start"),
    [
        ("What did she do last May?", day(2023, 5, 20), day(2022, 5, 1)),
        ("What did she do last May?", day(2023, 6, 1), day(2023, 5, 1)),
        ("When did Melanie go camping in June?", day(2023, 6, 10), day(2023, 6, 1)),
        ("When did Melanie go camping in June?", day(2023, 5, 31), day(2022, 6, 1)),
        ("they met on Aug 15th", day(2023, 8, 14), day(2022, 8, 15)),
        ("they met on Aug 15th", day(2023, 8, 15), day(2023, 8, 15)),
        ("on February 29", day(2023, 3, 1), day(2020, 2, 29)),
        ("last summer", day(2023, 7, 4), day(2022, 6, 1)),
        ("this winter", day(2024, 1, 10), day(2023, 12, 1)),
        ("last winter", day(2024, 1, 10), day(2022, 12, 1)),
        ("last Friday", day(2023, 10, 21), day(2023, 10, 20)),
    ],
)
def test_yearless_phrases_depend_on_now(question: str, now: datetime, start: datetime) -> None:
    assert resolved(question, now).start == start


def test_now_is_read_in_utc() -> None:
    # 01:00 on the 20th at UTC+5 is 20:00 on the 19th in UTC
    now = datetime(2023, 10, 20, 1, 0, tzinfo=timezone(timedelta(hours=5)))
    assert resolved("yesterday", now).start == day(2023, 10, 18)


def test_the_most_precise_time_wins_then_the_first() -> None:
    assert resolved("in 2023, what did she do on October 13?").phrase == "October 13"
    assert resolved("in July 2022 or in August 2022?").phrase == "July 2022"
    assert resolved("last year, or two weeks ago?").precision == "week"


# -- words that are not times --------------------------------------------------------------


@pytest.mark.parametrize(
    "question",
    [
        "What may happen to Caroline's plans?",
        "May I ask what Melanie likes to paint?",
        "What do you think may come next?",
        "This may be hard: what did she say?",
        "Why did all 3 may attend?",
        "Did they march in the parade?",
        "Did the leaves fall?",
        "Will this fall apart?",
        "What did June say to April about August?",
        "Did Melanie spring into action?",
        "What did they do in the past week?",
        "How often did she run in the last year?",
        "What did John do on Fridays?",
        "Who finished in 3:2022, or paid $1999 or 2,020 or 1.2022?",
        "What is Caroline's favourite book?",
        "",
    ],
)
def test_not_a_time(question: str) -> None:
    assert question_time(question, NOW) is None


def test_a_date_that_does_not_exist_names_no_time() -> None:
    # the phrase claims its words: its year alone does not stand in for it
    assert question_time("on February 30, 2023", NOW) is None
    assert question_time("on February 30", NOW) is None
    assert question_time("the week of 31 April 2023", NOW) is None


def test_since_a_future_period_is_not_a_time() -> None:
    assert question_time("since next year", NOW) is None
    assert question_time("since January 1 2024", NOW) is None


# -- argument checks -----------------------------------------------------------------------


def test_naive_now_is_rejected() -> None:
    with pytest.raises(InvalidQueryError, match="timezone-aware"):
        question_time("last year", datetime(2023, 10, 20, 15, 0))
    with pytest.raises(ValueError):  # the builtin it resembles
        question_time("no time here", datetime(2023, 10, 20))


def test_now_must_be_a_datetime() -> None:
    with pytest.raises(InvalidQueryError, match="datetime"):
        question_time("last year", date(2023, 10, 20))  # type: ignore[arg-type]


def test_time_focus_rejects_naive_and_inverted_periods() -> None:
    with pytest.raises(InvalidQueryError, match="timezone-aware"):
        TimeFocus(datetime(2023, 1, 1), day(2023, 1, 2), "x", "day")
    with pytest.raises(InvalidQueryError, match="not before"):
        TimeFocus(day(2023, 1, 2), day(2023, 1, 2), "x", "day")


# -- time_boost ----------------------------------------------------------------------------

JUNE = TimeFocus(day(2023, 6, 1), day(2023, 7, 1), "in June", "month")
"""June 2023; with the default 30-day slack the full weight runs to July 31."""


@pytest.mark.parametrize(
    ("at", "weight"),
    [
        (day(2023, 6, 1), 1.0),
        (day(2023, 6, 15), 1.0),
        (day(2023, 7, 1) - timedelta(microseconds=1), 1.0),
        (day(2023, 7, 1), 1.0),
        (day(2023, 7, 31) - timedelta(seconds=1), 1.0),
        (day(2023, 7, 31), 1.0),
        (day(2023, 8, 15), 0.5),
        (day(2023, 8, 30), 0.0),
        (day(2024, 1, 1), 0.0),
        (day(2023, 5, 17), 0.5),
        (day(2023, 5, 2), 0.0),
        (day(2020, 1, 1), 0.0),
    ],
)
def test_time_boost_edges(at: datetime, weight: float) -> None:
    assert time_boost(at, JUNE) == pytest.approx(weight, abs=1e-9)


def test_time_boost_decays_just_outside() -> None:
    assert 0.99 < time_boost(day(2023, 6, 1) - timedelta(hours=1), JUNE) < 1.0
    assert 0.99 < time_boost(day(2023, 7, 31) + timedelta(hours=1), JUNE) < 1.0


def test_time_boost_without_slack_is_the_period() -> None:
    assert time_boost(day(2023, 6, 30), JUNE, slack_days=0) == 1.0
    assert time_boost(day(2023, 7, 1), JUNE, slack_days=0) == 0.0
    assert time_boost(day(2023, 5, 31), JUNE, slack_days=0) == 0.0


def test_time_boost_with_a_short_slack() -> None:
    assert time_boost(day(2023, 7, 5), JUNE, slack_days=10) == 1.0
    assert time_boost(day(2023, 7, 16), JUNE, slack_days=10) == pytest.approx(0.5)


def test_time_boost_reads_any_timezone() -> None:
    at = datetime(2023, 5, 31, 23, 0, tzinfo=timezone(timedelta(hours=-2)))  # June 1, 01:00 UTC
    assert time_boost(at, JUNE, slack_days=0) == 1.0


@pytest.mark.parametrize("slack", [-1.0, math.nan, math.inf])
def test_time_boost_rejects_bad_slack(slack: float) -> None:
    with pytest.raises(InvalidQueryError, match="slack_days"):
        time_boost(day(2023, 6, 1), JUNE, slack_days=slack)


def test_time_boost_rejects_naive_at() -> None:
    with pytest.raises(InvalidQueryError, match="timezone-aware"):
        time_boost(datetime(2023, 6, 1), JUNE)


# -- properties ----------------------------------------------------------------------------

ZONES = st.sampled_from(
    [UTC, timezone(timedelta(hours=-11)), timezone(timedelta(hours=5, minutes=30))]
)
ANY_NOW = st.datetimes(timezones=ZONES)
"""Any aware instant, calendar edges included."""
NOW_NEAR = st.datetimes(
    min_value=datetime(1950, 1, 1), max_value=datetime(2090, 1, 1), timezones=ZONES
)
"""Aware instants far enough from the calendar's edges that every phrase resolves."""

FULL_MONTHS = (
    "January February March April May June July August September October November December"
).split()
ABBREVIATIONS = "Jan Feb Mar Apr May Jun Jul Aug Sep Sept Oct Nov Dec".split()
NUMBER_WORDS = "one two three four five six seven eight nine ten eleven twelve".split()
UNITS: tuple[Precision, ...] = ("day", "week", "month", "year")


def month_index(name: str) -> int:
    return [m[:3] for m in FULL_MONTHS].index(name[:3].title()) + 1


@st.composite
def month_phrases(draw: st.DrawFn) -> tuple[str, int, int | None, int | None]:
    """``(text, month, day, year)``: a month name with an optional day and year."""
    name = draw(st.sampled_from(FULL_MONTHS + ABBREVIATIONS))
    name = draw(st.sampled_from([name, name.lower(), name.upper()]))
    dom = draw(st.none() | st.integers(1, 31))
    year = draw(st.none() | st.integers(1900, 2099))
    if dom is None:
        body = name
    else:
        body = draw(st.sampled_from([f"{name} {dom}", f"{dom} {name}", f"the {dom}th of {name}"]))
    if year is not None:
        body += draw(st.sampled_from([f" {year}", f", {year}"]))
    lead = draw(st.sampled_from(["", "in ", "on ", "during ", "since ", "What did she do "]))
    return lead + body + draw(st.sampled_from(["", "?", " with Mel"])), month_index(name), dom, year


@st.composite
def ago_phrases(draw: st.DrawFn) -> tuple[str, int, Precision]:
    """``(text, n, unit)``: "N units ago" with N in digits or words."""
    count = draw(st.integers(1, 12))
    unit = draw(st.sampled_from(UNITS))
    number = draw(st.sampled_from([str(count), NUMBER_WORDS[count - 1]]))
    text = f"{number} {unit}{'s' if count > 1 else ''} ago"
    return draw(st.sampled_from([text, f"What happened {text}?"])), count, unit


def unit_start(precision: Precision, now: datetime) -> datetime:
    """The start of the calendar unit holding ``now`` (UTC), computed independently."""
    utc = now.astimezone(UTC)
    midnight = datetime(utc.year, utc.month, utc.day, tzinfo=UTC)
    if precision == "day":
        return midnight
    if precision == "week":
        return midnight - timedelta(days=utc.weekday())
    if precision == "month":
        return midnight.replace(day=1)
    if precision == "season":
        if utc.month == 12:
            return datetime(utc.year, 12, 1, tzinfo=UTC)
        if utc.month < 3:
            return datetime(utc.year - 1, 12, 1, tzinfo=UTC)
        return datetime(utc.year, utc.month // 3 * 3, 1, tzinfo=UTC)
    return datetime(utc.year, 1, 1, tzinfo=UTC)


def well_formed(focus: TimeFocus | None, text: str) -> None:
    if focus is None:
        return
    assert focus.start < focus.end
    for value in (focus.start, focus.end):
        assert value.tzinfo is not None
        assert value.utcoffset() == timedelta(0)
    assert focus.phrase
    assert focus.phrase in text


def named_period(
    text: str, month: int, dom: int | None, year: int, now: datetime
) -> tuple[datetime, Precision] | None:
    """Where a phrase naming its year starts, computed independently: that day or that
    month; ``None`` for a day the month does not have, or "since" a day not begun."""
    if dom is not None and dom > days_in(year, month):
        return None
    start = datetime(year, month, dom or 1, tzinfo=UTC)
    if text.startswith("since ") and start > now:
        return None
    return start, "day" if dom is not None else "month"


def ago_start(count: int, unit: Precision, now: datetime) -> datetime | None:
    """Where "``count`` ``unit``s ago" starts, computed independently (``None``: before
    the calendar's first year)."""
    utc = now.astimezone(UTC)
    try:
        if unit == "day":
            return unit_start("day", utc) - timedelta(days=count)
        if unit == "week":
            return unit_start("week", utc) - timedelta(weeks=count)
        if unit == "month":
            index = utc.year * 12 + utc.month - 1 - count
            return datetime(index // 12, index % 12 + 1, 1, tzinfo=UTC)
        return datetime(utc.year - count, 1, 1, tzinfo=UTC)
    except (OverflowError, ValueError):
        return None


@FAST
@given(month_phrases(), ANY_NOW)
def test_month_phrases_are_well_formed(
    phrase: tuple[str, int, int | None, int | None], now: datetime
) -> None:
    """Every phrase naming its year is recognised (unless it names no day) and starts
    where that day or month does; any phrase recognised is well formed."""
    text, month, dom, year = phrase
    focus = question_time(text, now)
    well_formed(focus, text)
    if year is None:
        return
    expected = named_period(text, month, dom, year, now)
    assert (None if focus is None else (focus.start, focus.precision)) == expected, text


@FAST
@given(ago_phrases(), ANY_NOW)
def test_ago_phrases_are_well_formed(phrase: tuple[str, int, Precision], now: datetime) -> None:
    """Every "N units ago" is recognised and starts N units before ``now``'s unit,
    unless that is before the calendar begins."""
    text, count, unit = phrase
    focus = question_time(text, now)
    well_formed(focus, text)
    start = ago_start(count, unit, now)
    if start is None:
        assert focus is None, text
        return
    assert focus is not None, text
    assert (focus.start, focus.precision) == (start, unit), text


def days_in(year: int, month: int) -> int:
    return ((date(year, month, 28) + timedelta(days=4)).replace(day=1) - timedelta(days=1)).day


@FAST
@given(month_phrases(), NOW_NEAR)
def test_a_named_year_and_month_are_kept(
    phrase: tuple[str, int, int | None, int | None], now: datetime
) -> None:
    text, month, dom, year = phrase
    if year is None:
        return
    focus = question_time(text, now)
    if dom is not None and dom > days_in(year, month):
        assert focus is None, text  # no such day
        return
    if focus is None:
        assert text.startswith("since "), text  # since a day not yet begun
        assert datetime(year, month, dom or 1, tzinfo=UTC) > now
        return
    assert focus.start.year == year
    if dom is None:
        assert (focus.precision, focus.start.month) == ("month", month)
    else:
        assert (focus.precision, focus.start.month, focus.start.day) == ("day", month, dom)


@FAST
@given(month_phrases(), NOW_NEAR)
def test_a_yearless_month_has_begun(
    phrase: tuple[str, int, int | None, int | None], now: datetime
) -> None:
    text, month, dom, year = phrase
    focus = question_time(text, now)
    if year is None and focus is not None:
        assert focus.start <= now
        assert focus.start.month == month
    connector, _, name = text.rstrip("?").partition(" ")
    if year is None and dom is None and connector in ("in", "during", "since"):
        if name.split()[0].title() not in FULL_MONTHS:
            return  # a connector takes full month names only
        utc = now.astimezone(UTC)
        begun = datetime(utc.year - (month > utc.month), month, 1, tzinfo=UTC)
        assert focus is not None, text  # the latest such month that has begun
        assert (focus.start, focus.precision) == (begun, "month"), text


@FAST
@given(ago_phrases(), NOW_NEAR)
def test_ago_is_in_the_past(phrase: tuple[str, int, Precision], now: datetime) -> None:
    text, _, unit = phrase
    focus = question_time(text, now)
    assert focus is not None, text
    assert focus.precision == unit
    assert focus.end <= unit_start(unit, now)
    assert focus.start < focus.end <= unit_start(unit, now)


@FAST
@given(
    st.sampled_from(
        [
            ("last week", "week"),
            ("last month", "month"),
            ("last year", "year"),
            ("yesterday", "day"),
            ("last weekend", "week"),
            ("last summer", "season"),
            ("last winter", "season"),
            ("this past fall", "season"),
        ]
        + [(f"last {m}", "month") for m in FULL_MONTHS]
    ),
    NOW_NEAR,
)
def test_last_is_in_the_past(phrase: tuple[str, Precision], now: datetime) -> None:
    text, unit = phrase
    focus = question_time(f"What did she do {text}?", now)
    assert focus is not None, text
    assert focus.precision == unit
    assert focus.end <= unit_start(unit, now)


@FAST
@given(
    st.datetimes(min_value=datetime(1950, 1, 1), max_value=datetime(2090, 1, 1), timezones=ZONES),
    st.integers(1, 400 * 24 * 3600),
    st.datetimes(timezones=ZONES),
    st.floats(min_value=0, max_value=400, allow_nan=False),
)
def test_time_boost_is_a_weight(start: datetime, length: int, at: datetime, slack: float) -> None:
    focus = TimeFocus(start, start + timedelta(seconds=length), "x", "day")
    assert 0.0 <= time_boost(at, focus, slack_days=slack) <= 1.0


@FAST
@given(
    st.one_of(month_phrases().map(lambda p: p[0]), ago_phrases().map(lambda p: p[0])),
    NOW_NEAR,
    st.data(),
    st.floats(min_value=0, max_value=400, allow_nan=False),
)
def test_time_boost_is_one_inside_the_focus(
    text: str, now: datetime, data: st.DataObject, slack: float
) -> None:
    focus = question_time(text, now)
    if focus is None:
        return
    micros = (focus.end - focus.start) // timedelta(microseconds=1)
    inside = focus.start + timedelta(microseconds=data.draw(st.integers(0, micros - 1)))
    assert time_boost(inside, focus, slack_days=slack) == 1.0
