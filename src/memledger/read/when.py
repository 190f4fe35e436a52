"""The time a recall question is about, found without an LLM.

:func:`question_time` reads a question ("Where did Joanna travel to in July
2022?") and the instant it is asked (``now``), and returns the calendar period
it names as a :class:`TimeFocus`: a half-open ``[start, end)`` in UTC, the
matched text and its precision. :func:`time_boost` turns a focus into a weight
for a memory's time, so recall can favour memories from then.

Pure: ``now`` is the only notion of the present, and it must be timezone-aware.
Calendar units are UTC, as in :mod:`memledger.domain.timephrases`: a day runs
from 00:00 UTC, a week from Monday 00:00 UTC, a month from its first day.
Seasons are northern-hemisphere and meteorological: spring March to May,
summer June to August, fall (autumn) September to November, winter December to
February. "winter 2022" is the winter whose January and February fall in 2022
(December 2021 to February 2022), as in "the winter of 2022" storms and the
"Winter 2022" Olympics.

Recognised (case-insensitive), with ``MONTH`` a month name (``October``,
``Oct``, ``Oct.``), ``DAY`` ``1`` to ``31`` with an optional ``st|nd|rd|th``,
``YEAR`` 1900 to 2099, ``SEASON`` ``spring|summer|fall|autumn|winter`` and
``N`` a number (``2``, ``two``; words ``a``/``an`` and ``one`` to ``twelve``):

==================================================  ============================  =========
phrase                                              resolves to                   precision
==================================================  ============================  =========
``October 13, 2023``, ``Oct 13th``, ``1 May,        that day                      day
2022``, ``the 1st of May 2022``, ``2023-10-13``
``today``, ``tonight``, ``yesterday``, ``last       that day                      day
night``, ``the day before yesterday``
``on Friday``                                       the latest Friday begun       day
``last|this past Friday``                           the latest before today       day
``N days ago``                                      N days before today           day
``the week of 23 August 2023``                      the week holding that day     week
``last|this|next|this past week``, ``N weeks ago``  a Monday-based week           week
``last|this|next weekend``                          a Saturday and Sunday         week
``July 2022``, ``May, 2022``, ``May of 2022``       that month                    month
``in|during|since|throughout|early|mid|late|the     the month (see below)         month
end|week|... of MONTH`` (full names only)
``last|this|next|this past MONTH``                  the month (see below)         month
``MONTH (of) last|this|next year`` after one of     that month of that year       month
those connectors
``last|this|next month``, ``N months ago``          a calendar month              month
``summer 2021``, ``summer of 2021``                 that season                   season
``in|during|over|throughout|since (the) SEASON``    the season (see below)        season
(also ``SEASON (of) last|this|next year``)
``last|this|next|(this) past SEASON``               the season (see below)        season
``in 2022``, ``2022``                               that year                     year
``last|this|next|this past year``, ``N years ago``  a calendar year               year
==================================================  ============================  =========

A month, season or month-day without its year, after a bare connector ("in
June", "on Aug 15th", "during the summer"), is the latest one that has begun by
``now``; after ``last``/``this past`` the latest that has fully ended (so "last
May", asked in May, is the previous year's May); after ``next`` the first that
starts after ``now``; after ``this`` the one holding ``now``, else the one
starting in ``now``'s year. "last year" is the previous calendar year, "4 years
ago" the calendar year four before ``now``'s, "two weeks ago" the week two
before ``now``'s, "last weekend" the weekend of the previous week. A phrase
after ``since`` ("since June", "since 2022") runs from the start of the named
period to the end of ``now``'s day, keeping the named period's precision.
A phrase that names no period ("February 30, 2023", "since next year", a year
past 9999) gives nothing, and no fragment of it ("2023") stands in for it.

Words that are also verbs or names are times only in context. "May" and "March"
are months next to a day number or a year, or after a connector above ("May I
...", "What may happen ..." and "they march" are not times); in lower case
after ``last|this|next`` ("this may be") or beside a day number without a year
("all 3 may go") they are verbs, unless after ``on`` ("on may 5"). A bare month
name never counts (it may be a person: "June", "April"). Seasons need a year or
a connector ("the leaves fall" is not a time), and "this|next|last fall" before
"apart", "down", "over", ... is a verb. "the last year" and "the past week" (a
trailing window, not a calendar unit), bare weekdays, clock times and numeric
dates other than ISO ``YYYY-MM-DD`` are not recognised.

When a question names several times, the most precise wins (day, week, month,
season, year), then the first; overlapping matches keep the longest, so "the
week of 23 August 2023" is a week and "July 2022" is not the year 2022.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Literal

from memledger.domain.timephrases import NUMBER_WORDS, month_number
from memledger.errors import InvalidQueryError

__all__ = ["Precision", "TimeFocus", "question_time", "time_boost"]

Precision = Literal["day", "week", "month", "season", "year"]
"""The calendar unit a question names; a weekend counts as a week."""

_RANK: dict[Precision, int] = {"day": 0, "week": 1, "month": 2, "season": 3, "year": 4}


@dataclass(frozen=True, slots=True)
class TimeFocus:
    """The period ``[start, end)`` (aware, ``start < end``) a question asks about."""

    start: datetime
    end: datetime
    phrase: str
    precision: Precision

    def __post_init__(self) -> None:
        for what, value in (("start", self.start), ("end", self.end)):
            if value.tzinfo is None or value.utcoffset() is None:
                raise InvalidQueryError(f"time focus {what} must be timezone-aware, got {value!r}")
        if not self.start < self.end:
            raise InvalidQueryError(
                f"time focus start {self.start.isoformat()!r} "
                f"is not before its end {self.end.isoformat()!r}"
            )


@dataclass(frozen=True, slots=True)
class _Span:
    start: datetime
    end: datetime


# -- calendar units (UTC) ------------------------------------------------------------------


def _day(value: date) -> _Span:
    start = datetime(value.year, value.month, value.day, tzinfo=UTC)
    return _Span(start, start + timedelta(days=1))


def _week(value: date) -> _Span:
    monday = _day(value - timedelta(days=value.weekday())).start
    return _Span(monday, monday + timedelta(days=7))


def _month(year: int, month: int) -> _Span:
    index = year * 12 + month - 1
    start = datetime(index // 12, index % 12 + 1, 1, tzinfo=UTC)
    after = datetime((index + 1) // 12, (index + 1) % 12 + 1, 1, tzinfo=UTC)
    return _Span(start, after)


def _year(year: int) -> _Span:
    return _Span(datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC))


_SEASON_FIRST = {"spring": 3, "summer": 6, "fall": 9, "autumn": 9, "winter": 12}


def _season(name: str, year: int) -> _Span:
    """The season ``name`` of ``year``; winter is the one ending in ``year``."""
    first = _SEASON_FIRST[name]
    start = _month(year - 1 if first == 12 else year, first).start
    return _Span(start, _month(year, first + 2 - (12 if first == 12 else 0)).end)


def _series(make: Callable[[int], _Span], around: int, reach: int = 2) -> list[_Span]:
    """``make(year)`` for the years around ``around``, skipping impossible ones, in order."""
    units: list[_Span] = []
    for year in range(around - reach, around + reach + 1):
        try:
            units.append(make(year))
        except (ValueError, OverflowError):  # beyond year 1 or 9999, or no such day
            continue
    return units


_Pick = Literal["begun", "ended", "this", "next"]


def _pick(units: list[_Span], how: _Pick, now: datetime) -> _Span:
    """Choose among recurring units (sorted by start), as the module docstring says;
    :class:`ValueError` when none fits (only at the calendar's edges)."""
    if how == "begun":
        chosen = next((u for u in reversed(units) if u.start <= now), None)
    elif how == "ended":
        chosen = next((u for u in reversed(units) if u.end <= now), None)
    elif how == "next":
        chosen = next((u for u in units if u.start > now), None)
    else:
        chosen = next((u for u in units if u.start <= now < u.end), None) or next(
            (u for u in units if u.start.year == now.year), None
        )
    if chosen is None:
        raise ValueError(f"no {how} unit around {now.isoformat()}")
    return chosen


_QUALIFIER: dict[str, _Pick] = {
    "last": "ended",
    "past": "ended",
    "this past": "ended",
    "this": "this",
    "next": "next",
}


def _qualifier(word: str | None) -> _Pick:
    return "begun" if word is None else _QUALIFIER[" ".join(word.casefold().split())]


# -- words -------------------------------------------------------------------------------

_NUMBERS = NUMBER_WORDS
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_DAY_WORDS = {"today": 0, "tonight": 0, "yesterday": 1, "last night": 1}
_AMBIGUOUS = frozenset({"may", "march", "mar"})
"""Month names that are also verbs: after ``last|this|next`` they must be capitalised."""

_FULL_MONTH = (
    r"(?:january|february|march|april|may|june|july|august|september|october|november"
    r"|december|sept)"
)
_MONTH = (
    r"(?:january|february|march|april|may|june|july|august|september|october|november"
    r"|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?"
)
_DAY = r"(?:3[01]|[12]\d|0?[1-9])(?:st|nd|rd|th)?"
_YEAR = r"(?:19|20)\d\d"
_SEASON = r"(?:spring|summer|fall|autumn|winter)"
_WEEKDAY = "(?:" + "|".join(_WEEKDAYS) + ")"
_NUMBER = r"(?:\d{1,4}|a\s+couple(?:\s+of)?|" + "|".join(_NUMBERS) + ")"
_Q = r"(?:this\s+past|last|this|next)"
_PART = r"(?:(?:early|mid|late)[\s-]+)"
_END = r"(?![\w-])"
_REL_YEAR = r"(?:\s+(?:of\s+)?(?P<yq>last|this|next)\s+year)"
_FALLING = re.compile(
    r"\s+(?:apart|down|over|off|through|short|behind|back|asleep|ill|sick|victim|under|into"
    r"|flat|out)\b",
    re.IGNORECASE,
)
"""Words after "this|next|last fall" that make "fall" a verb or a tumble."""


def _md(p: str) -> str:
    """``October 13(, 2023)``, its groups named with prefix ``p``."""
    return rf"(?P<{p}m>{_MONTH})\s+(?P<{p}d>{_DAY})(?:,?\s+(?:of\s+)?(?P<{p}y>{_YEAR}))?"


def _dm(p: str) -> str:
    """``(the) 13(th) (of) October(, 2023)``, its groups named with prefix ``p``."""
    return (
        rf"(?:the\s+)?(?P<{p}d>{_DAY})\s+(?:of\s+)?(?P<{p}m>{_MONTH})"
        rf"(?:,?\s+(?:of\s+)?(?P<{p}y>{_YEAR}))?"
    )


def _number(text: str) -> int:
    word = " ".join(text.casefold().split())
    if word.startswith("a couple"):
        return 2
    return int(word) if word.isdigit() else _NUMBERS[word]


def _relative_year(m: re.Match[str], now: datetime) -> int | None:
    word = m.groupdict().get("yq")
    return None if word is None else now.year + {"last": -1, "this": 0, "next": 1}[word.lower()]


# -- rules -------------------------------------------------------------------------------
#
# A resolver returns ``None`` when its match is not a time phrase after all ("this may
# be"), and raises ValueError or OverflowError when it is one that names no period
# ("February 30, 2023", "since next year", a year beyond 9999): such a phrase still
# claims its words, so no fragment of it ("2023") stands in for it.

_Found = tuple[_Span, Precision]
_Resolver = Callable[[re.Match[str], datetime], _Found | None]
_FLAGS = re.IGNORECASE | re.VERBOSE


def _calendar_day(year: int, month: int, dom: int) -> _Span:
    return _day(date(year, month, dom))


def _named_day(m: re.Match[str], p: str, now: datetime) -> _Span:
    """The day of a :func:`_md`/:func:`_dm` match with prefix ``p``; yearless: the latest begun."""
    month = month_number(m.group(p + "m"))
    dom = int(re.sub(r"\D", "", m.group(p + "d")))
    if m.group(p + "y"):
        return _calendar_day(int(m.group(p + "y")), month, dom)
    # four years back and forth: the latest February 29 is always among them
    units = _series(lambda y: _calendar_day(y, month, dom), now.year, reach=4)
    return _pick(units, "begun", now)


_ON = re.compile(r"\bon\s+(?:the\s+)?\Z", re.IGNORECASE)


def _verb(m: re.Match[str], p: str) -> bool:
    """Whether a yearless day-month match is more likely a verb ("all 3 may attend"):
    ``may``/``march`` in lower case and not after ``on``."""
    name = m.group(p + "m")
    return (
        name.casefold().rstrip(".") in _AMBIGUOUS
        and name.islower()
        and not m.group(p + "y")
        and not _ON.search(m.string, 0, m.start("c"))
    )


def _date(m: re.Match[str], now: datetime) -> _Found | None:
    p = "a" if m.group("am") else "b"
    return None if _verb(m, p) else (_named_day(m, p, now), "day")


def _week_of(m: re.Match[str], now: datetime) -> _Found | None:
    p = "a" if m.group("am") else "b"
    return _week(_named_day(m, p, now).start.date()), "week"


def _iso(m: re.Match[str], now: datetime) -> _Found | None:
    return _calendar_day(int(m.group("iy")), int(m.group("im")), int(m.group("id"))), "day"


def _day_word(m: re.Match[str], now: datetime) -> _Found | None:
    word = " ".join(m.group("c").casefold().split())
    return _day(now.date() - timedelta(days=_DAY_WORDS.get(word, 2))), "day"


def _weekday(m: re.Match[str], now: datetime) -> _Found | None:
    today = now.date()
    back = (today.weekday() - _WEEKDAYS.index(m.group("wd").casefold())) % 7
    if m.groupdict().get("q") and back == 0:
        back = 7  # "last Friday", said on a Friday, is a week ago
    return _day(today - timedelta(days=back)), "day"


def _month_year(m: re.Match[str], now: datetime) -> _Found | None:
    return _month(int(m.group("y")), month_number(m.group("m"))), "month"


def _month_named(m: re.Match[str], now: datetime) -> _Found | None:
    name, qualifier = m.group("m"), m.groupdict().get("q")
    if qualifier and name.casefold() in _AMBIGUOUS and not name[0].isupper():
        return None  # "this may be", "the last march"
    month = month_number(name)
    year = _relative_year(m, now)
    if year is not None:
        return _month(year, month), "month"
    return _pick(_series(lambda y: _month(y, month), now.year), _qualifier(qualifier), now), "month"


def _season_named(m: re.Match[str], now: datetime) -> _Found | None:
    name, qualifier = m.group("s").casefold(), m.groupdict().get("q")
    if qualifier and name == "fall" and _FALLING.match(m.string, m.end()):
        return None  # "will this fall apart?"
    given = m.groupdict().get("y")
    year = int(given) if given else _relative_year(m, now)
    if year is not None:
        return _season(name, year), "season"
    units = _series(lambda y: _season(name, y), now.year)
    return _pick(units, _qualifier(qualifier), now), "season"


def _relative(m: re.Match[str], now: datetime) -> _Found | None:
    step = {"last": 1, "past": 1, "this": 0, "next": -1}[m.group("q").casefold().split()[-1]]
    return _shifted(m.group("u").casefold(), step, now)


def _ago(m: re.Match[str], now: datetime) -> _Found | None:
    count = _number(m.group("n"))
    if count < 1:
        raise ValueError("0 units ago is now, not a past period")
    return _shifted(m.group("u").casefold().rstrip("s"), count, now)


def _shifted(unit: str, back: int, now: datetime) -> _Found:
    """The ``unit`` holding ``now``, moved ``back`` units into the past."""
    today = now.date()
    if unit == "day":
        return _day(today - timedelta(days=back)), "day"
    if unit in ("week", "weekend"):
        week = _week(today - timedelta(days=7 * back))
        start = week.start + timedelta(days=5) if unit == "weekend" else week.start
        return _Span(start, week.end), "week"
    if unit == "month":
        return _month(now.year, now.month - back), "month"
    return _year(now.year - back), "year"


def _year_alone(m: re.Match[str], now: datetime) -> _Found | None:
    return _year(int(m.group("c"))), "year"


_RULES: tuple[tuple[re.Pattern[str], _Resolver], ...] = (
    (
        re.compile(rf"\b(?P<c>(?:the\s+)?week\s+of\s+(?:{_md('a')}|{_dm('b')})){_END}", _FLAGS),
        _week_of,
    ),
    (re.compile(r"\b(?P<c>(?P<iy>\d{4})-(?P<im>\d\d?)-(?P<id>\d\d?))(?![\w-])"), _iso),
    (re.compile(rf"\b(?P<c>{_md('a')}|{_dm('b')}){_END}", _FLAGS), _date),
    (
        re.compile(rf"\b(?P<c>(?P<m>{_MONTH}),?\s+(?:of\s+)?(?P<y>{_YEAR})){_END}", _FLAGS),
        _month_year,
    ),
    (
        re.compile(
            rf"\b(?:(?:in|during|since|throughout|(?:end|beginning|start|middle|month|rest|week|weekend|half|part)\s+of)"
            rf"\s+{_PART}?|{_PART})(?P<c>(?P<m>{_FULL_MONTH}){_REL_YEAR}?){_END}",
            _FLAGS,
        ),
        _month_named,
    ),
    (re.compile(rf"\b(?P<c>(?P<q>{_Q})\s+(?P<m>{_FULL_MONTH})){_END}", _FLAGS), _month_named),
    (
        re.compile(rf"\b(?P<c>(?P<s>{_SEASON}),?\s+(?:of\s+)?(?P<y>{_YEAR})){_END}", _FLAGS),
        _season_named,
    ),
    (
        re.compile(
            rf"\b(?:in|during|over|throughout|since)\s+(?:the\s+)?{_PART}?"
            rf"(?P<c>(?P<s>{_SEASON}){_REL_YEAR}?){_END}",
            _FLAGS,
        ),
        _season_named,
    ),
    (re.compile(rf"\b(?P<c>(?P<q>{_Q}|past)\s+(?P<s>{_SEASON})){_END}", _FLAGS), _season_named),
    (
        re.compile(
            rf"\b(?P<c>the\s+day\s+before\s+yesterday|yesterday|today|tonight|last\s+night){_END}",
            _FLAGS,
        ),
        _day_word,
    ),
    (re.compile(rf"\bon\s+(?P<c>(?P<wd>{_WEEKDAY})){_END}", _FLAGS), _weekday),
    (
        re.compile(rf"\b(?P<c>(?P<q>last|this\s+past)\s+(?P<wd>{_WEEKDAY})){_END}", _FLAGS),
        _weekday,
    ),
    (
        re.compile(
            rf"(?<!the\s)\b(?P<c>(?P<q>{_Q}|past)\s+(?P<u>week|weekend|month|year)){_END}",
            _FLAGS,
        ),
        _relative,
    ),
    (
        re.compile(
            rf"\b(?P<c>(?P<n>{_NUMBER})\s+(?P<u>(?:day|week|month|year)s?)\s+ago){_END}", _FLAGS
        ),
        _ago,
    ),
    (re.compile(rf"(?<![\w$£€#/:.,-])(?P<c>{_YEAR})(?![\w%/:-]|[.,]\d)"), _year_alone),
)
_SINCE = re.compile(rf"\bsince\s+(?:the\s+)?{_PART}?\Z", re.IGNORECASE)


# -- the public functions ----------------------------------------------------------------


def _aware(value: object, what: str) -> datetime:
    if not isinstance(value, datetime):
        raise InvalidQueryError(f"{what} must be a datetime, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidQueryError(f"{what} must be timezone-aware, got naive {value.isoformat()!r}")
    return value


_Claim = tuple[tuple[int, int], TimeFocus | None]


def _claim(m: re.Match[str], resolve: _Resolver, now: datetime) -> _Claim | None:
    """The words ``m`` claims and the period they name (``None``: no period); ``None``
    when ``m`` is not a time phrase at all."""
    try:
        found = resolve(m, now)
        if found is None:
            return None
        span, precision = found
        if _SINCE.search(m.string, 0, m.start("c")):
            if span.start > now:
                raise ValueError("since a period that has not begun")
            span = _Span(span.start, _day(now.date()).end)
    except (ValueError, OverflowError):  # no such day, not begun, beyond year 1 or 9999
        return m.span("c"), None
    return m.span("c"), TimeFocus(span.start, span.end, m.group("c"), precision)


def question_time(question: str, now: datetime) -> TimeFocus | None:
    """The period ``question`` asks about, resolved against ``now``, or ``None``.

    ``now`` (the moment the question is asked) must be timezone-aware
    (:class:`~memledger.errors.InvalidQueryError` otherwise); it is read in UTC.
    See the module docstring for what is recognised and how ties are broken.
    """
    try:
        ref = _aware(now, "now").astimezone(UTC)
    except OverflowError:  # before 0001-01-01 or after 9999-12-31 in UTC: no calendar
        return None
    claims = [
        claim
        for pattern, resolve in _RULES
        for m in pattern.finditer(question)
        if (claim := _claim(m, resolve, ref)) is not None
    ]
    claims.sort(key=lambda c: (c[0][0], c[0][0] - c[0][1]))  # first, then longest
    kept: list[_Claim] = []
    for claim in claims:
        if not kept or claim[0][0] >= kept[-1][0][1]:
            kept.append(claim)
    periods = [(span, focus) for span, focus in kept if focus is not None]
    best = min(periods, key=lambda p: (_RANK[p[1].precision], p[0][0]), default=None)
    return None if best is None else best[1]


def time_boost(at: datetime, focus: TimeFocus, *, slack_days: float = 30.0) -> float:
    """How well a memory's time ``at`` fits ``focus``: a weight in ``[0, 1]``.

    1.0 inside ``[focus.start, focus.end + slack)``, falling linearly to 0 over
    another ``slack_days`` before ``focus.start`` and after ``focus.end + slack``;
    0 beyond. ``at`` is a memory's valid-from or said-at time.

    Why the window leans forward: people tell what happened days or weeks after
    it happened ("we went camping last weekend", said on a Tuesday), so a
    memory of a June trip is often *said* in July, and its said-at time is what
    a conversation turn carries. Why it decays rather than stops: a named time
    is approximate (a trip "in June" may start on May 30; a plan is told before
    it happens), and a cliff at the boundary would rank a memory one day off
    as if it were a year off. The slack is in days whatever the precision: a
    day and a year are both told about a few weeks late.

    ``at`` must be timezone-aware and ``slack_days`` finite and non-negative
    (:class:`~memledger.errors.InvalidQueryError` otherwise); with no slack the
    weight is 1 inside ``[start, end)`` and 0 outside.
    """
    when = _aware(at, "at")
    if not (math.isfinite(slack_days) and slack_days >= 0):
        raise InvalidQueryError(f"slack_days must be finite and >= 0, got {slack_days!r}")
    slack = slack_days * 86400.0
    offset = (when - focus.start).total_seconds()
    length = (focus.end - focus.start).total_seconds()
    if 0 <= offset < length + slack:
        return 1.0
    if slack == 0:
        return 0.0
    distance = -offset if offset < 0 else offset - length - slack
    return max(0.0, 1.0 - distance / slack)
