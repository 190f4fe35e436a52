"""Valid-time phrases in free text, resolved against a reference instant.

Pure: the reference (an event's ``occurred_at``) is the only notion of "now".
Every result is UTC-aware. Calendar units are UTC: a day runs from 00:00 UTC to
the next 00:00 UTC, a week from Monday 00:00 UTC, a month from its first day,
a year from January 1. Nothing here raises on free text: text without a
phrase gives ``None`` or ``()``.

Recognised (case-insensitive), with DATE any of the date expressions below:

=================================================  ==================================
phrase                                             resolves to
=================================================  ==================================
``from|starting|beginning|as of|effective DATE``   start of DATE (``form="start"``);
(optionally ``on``/``onwards``/``forward``)        "from now on" starts at the reference
``until|till|til|'til DATE``                       end = start of DATE (exclusive)
``through|thru DATE``                              end = end of DATE (inclusive)
``since DATE``                                     start of DATE, in the past
``from|between DATE until|till|to|through|and|-   both; ``to``, ``through`` and ``and``
DATE``                                             are inclusive, ``until`` exclusive
``for the rest of the day|week|month|year|MONTH``  [reference, end of that unit)
``today``, ``tonight``, ``tomorrow``,              that unit as a window
``this|next week|month|year``,                     (``form="window"``)
``on|this|next|coming WEEKDAY``, ``on DATE``,
a bare month-day date, ``in MONTH``, ``in YEAR``
``until further notice``                           no bounds (``form="open"``)
=================================================  ==================================

With ``past=True`` (the extractor's reading of what a speaker tells about
themselves), phrases of the past are recognised too. They start in the past and
set no end (a move "two weeks ago" still holds):

=================================================  ==================================
phrase                                             resolves to (``form="past"``)
=================================================  ==================================
``N minutes|hours|days|weeks|months|years|decades  the reference minus N units (days
ago|back|earlier`` (N a number, "a", "one" ...     and longer: from the start of that
"twelve", "a couple (of)"; "about"/"over" ...      day)
allowed before it)
``yesterday``, ``last night``                      start of yesterday
``last|this past week|weekend|month|year``,        start of that unit (a weekend
``last WEEKDAY``, ``over the (long) weekend``      starts on Saturday: the latest one)
``earlier today|this week|month|year``             start of this unit
``(back) in YEAR`` (a year already over),          start of it
``back in MONTH``                                  start of the latest such month
=================================================  ==================================

and phrases that place a statement in time without bounding it (``form="vague"``,
no start, no end): "a while ago/back", "some time ago", "a few/several days ago",
"recently", "lately", "these days", "nowadays", "at the moment", "right now",
"currently", "over the summer/holidays", "last spring".

Date expressions: ``November 1``, ``Nov 1st``, ``Nov. 1, 2026``, ``1 November``,
``the 1st of November``, ``2026-11-01``, ``November`` (a month), ``2024`` (a
year), ``Friday``/``next Friday``/``this Friday``/``last Friday`` (a day),
``today``/``tomorrow``/``yesterday``/``tonight``, ``now`` (the reference
instant), ``this|next|last week|month|year``, ``the end of the
week|month|year``/``the end of October`` (the instant the unit ends).

A date without its year is the next one that fits: a start is the first such
unit not yet over at the reference ("from November 1" said on November 1 is
this year's, said on November 2 next year's); an exclusive end is the first
such unit starting after the reference (or after the start, in a range); a
"since" date is the latest one that has begun. "next Friday" is the first
Friday after the reference's day, "this Friday" the first on or after it.

Invariant, whatever the text: when both are set, ``start < end``; when ``end``
is set, ``end > reference``. A phrase that cannot satisfy it ("until 2020",
"since 2030", "until yesterday"), or that falls outside the calendar (years 1
to 9999), is not recognised. A bare weekday ("Friday") is deliberately not a
phrase: it is too often a cadence ("Friday again") or a name ("Friday Labs");
neither is "May" without a connector.

:func:`find_all` returns every phrase, in order and without overlaps;
:func:`find` the first. The reference must be timezone-aware.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Literal

from memledger.domain.records import require_aware
from memledger.errors import InvalidIntervalError

__all__ = ["Form", "TimePhrase", "find", "find_all"]

Form = Literal["start", "end", "range", "since", "rest", "window", "open", "past", "vague"]
"""How a phrase bounds time: a start only, an end only, both from a range, a past
start, the rest of a unit, a whole unit (a window), explicitly no bound; with
``past=True`` also the start of something that happened ("two weeks ago"), or a
time that bounds nothing ("these days", "a while ago")."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TimePhrase:
    """A resolved phrase: ``text[span[0]:span[1]] == phrase``."""

    start: datetime | None
    end: datetime | None
    phrase: str
    span: tuple[int, int]
    form: Form


@dataclass(frozen=True, slots=True)
class _Unit:
    """A calendar unit ``[start, end)``; ``start == end`` for an instant."""

    start: datetime
    end: datetime


_MONTHS = {
    "jan": 1,
    "feb": 2,
    "mar": 3,
    "apr": 4,
    "may": 5,
    "jun": 6,
    "jul": 7,
    "aug": 8,
    "sep": 9,
    "oct": 10,
    "nov": 11,
    "dec": 12,
}
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTH = (
    r"(?:january|february|march|april|may|june|july|august|september|october|november"
    r"|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)"
)
_WEEKDAY = "(?:" + "|".join(_WEEKDAYS) + ")"
_DAY = r"(?:3[01]|[12]\d|0?[1-9])(?:st|nd|rd|th)?"
_YEAR = r"(?:19|20)\d\d"
_END = r"(?![\w-])"


def _date(p: str) -> str:
    """The DATE sub-expression, its groups named with prefix ``p``."""
    return rf"""(?:
        (?P<{p}iso>(?P<{p}iy>\d{{4}})-(?P<{p}im>\d{{1,2}})-(?P<{p}id>\d{{1,2}})){_END}
      | (?P<{p}md>(?P<{p}mdm>{_MONTH})\.?\s+(?P<{p}mdd>{_DAY})(?:,?\s+(?P<{p}mdy>{_YEAR}))?){_END}
      | (?P<{p}dm>(?:the\s+)?(?P<{p}dmd>{_DAY})\s+(?:of\s+)?(?P<{p}dmm>{_MONTH})\.?
            (?:,?\s+(?P<{p}dmy>{_YEAR}))?){_END}
      | (?P<{p}eo>(?:the\s+)?end\s+of\s+(?:(?:the|this)\s+(?P<{p}eou>week|month|year)
            |(?P<{p}eom>{_MONTH})(?:\s+(?P<{p}eoy>{_YEAR}))?)){_END}
      | (?P<{p}mo>(?P<{p}mom>{_MONTH})\.?(?:\s+(?P<{p}moy>{_YEAR}))?){_END}
      | (?P<{p}yr>{_YEAR}){_END}
      | (?P<{p}wd>(?:(?P<{p}wq>this|next|coming|last)\s+)?(?P<{p}wdn>{_WEEKDAY})){_END}
      | (?P<{p}rel>today|tonight|tomorrow|yesterday|now){_END}
      | (?P<{p}per>(?P<{p}pq>this|next|last)\s+(?P<{p}pu>week|month|year)){_END}
    )"""


_FLAGS = re.IGNORECASE | re.VERBOSE
_RANGE = re.compile(
    rf"\b(?:from|starting|beginning|between)\s+{_date('a')}\s*"
    rf"(?:(?P<conn>until|till|til|'til|to|through|thru|and)\s+|[-–]\s*){_date('b')}",
    _FLAGS,
)
_START = re.compile(
    rf"\b(?:from|starting(?:\s+(?:from|on))?|beginning(?:\s+(?:from|on))?|as\s+of"
    rf"|effective(?:\s+from)?)\s+{_date('a')}(?:\s+(?:on(?:wards)?|forward)\b)?",
    _FLAGS,
)
_UNTIL = re.compile(rf"(?<!\w)(?P<conn>until|till|til|'til|through|thru)\s+{_date('a')}", _FLAGS)
_SINCE = re.compile(rf"\b(?:ever\s+)?since\s+{_date('a')}", _FLAGS)
_REST = re.compile(
    rf"\bfor\s+the\s+rest\s+of\s+(?:(?:the|this)\s+(?P<ru>day|week|month|year)|(?P<rt>today)"
    rf"|(?P<rm>{_MONTH})){_END}",
    _FLAGS,
)
_WINDOW = re.compile(rf"\b(?P<lead>on\s+|in\s+)?{_date('a')}", _FLAGS)
_OPEN = re.compile(r"\buntil\s+further\s+notice\b", _FLAGS)


def _day(value: date) -> _Unit:
    start = datetime(value.year, value.month, value.day, tzinfo=UTC)
    return _Unit(start, start + timedelta(days=1))


def _month(year: int, month: int) -> _Unit:
    start = datetime(year, month, 1, tzinfo=UTC)
    after = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
    return _Unit(start, after)


def _year(year: int) -> _Unit:
    return _Unit(datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC))


def _week(value: date) -> _Unit:
    monday = _day(value - timedelta(days=value.weekday())).start
    return _Unit(monday, monday + timedelta(days=7))


def _period(unit: str, ref: datetime) -> _Unit:
    if unit == "day":
        return _day(ref.date())
    if unit == "week":
        return _week(ref.date())
    if unit == "month":
        return _month(ref.year, ref.month)
    return _year(ref.year)


def _shift(unit: str, current: _Unit, step: int) -> _Unit:
    """The ``unit`` ``step`` units after (or before) ``current``."""
    if unit == "week":
        return _week((current.start + timedelta(days=7 * step)).date())
    if unit == "month":
        index = current.start.year * 12 + current.start.month - 1 + step
        return _month(index // 12, index % 12 + 1)
    return _year(current.start.year + step)


def month_number(name: str) -> int:
    """1-12 for a month's name or its first three letters, in any case ("Sept" is 9)."""
    return _MONTHS[name.casefold()[:3]]


def _day_number(text: str) -> int:
    return int(re.sub(r"\D", "", text))


def _calendar_day(year: int, month: int, dom: int) -> _Unit | None:
    try:
        return _day(date(year, month, dom))
    except ValueError:
        return None


def _candidates(g: Mapping[str, str | None], p: str, ref: datetime) -> tuple[list[_Unit], bool]:
    """The units a DATE may mean, in time order, and whether it is fixed (names its
    year, or is relative to the reference) rather than a choice among years/weeks."""
    years = range(ref.year - 1, ref.year + 9)
    if g[p + "iso"]:
        unit = _calendar_day(int(g[p + "iy"] or 0), int(g[p + "im"] or 0), int(g[p + "id"] or 0))
        return ([unit] if unit else []), True
    for kind in ("md", "dm"):
        if g[p + kind]:
            month = month_number(g[p + kind + "m"] or "")
            dom = _day_number(g[p + kind + "d"] or "")
            year = g[p + kind + "y"]
            chosen = [int(year)] if year else years
            units = [u for y in chosen if (u := _calendar_day(y, month, dom)) is not None]
            return units, year is not None
    if g[p + "eo"]:
        if g[p + "eou"]:
            end = _period((g[p + "eou"] or "").casefold(), ref).end
            return [_Unit(end, end)], True
        month = month_number(g[p + "eom"] or "")
        year = g[p + "eoy"]
        ends = [_month(y, month).end for y in ([int(year)] if year else years)]
        return [_Unit(e, e) for e in ends], year is not None
    if g[p + "mo"]:
        month = month_number(g[p + "mom"] or "")
        year = g[p + "moy"]
        return [_month(y, month) for y in ([int(year)] if year else years)], year is not None
    if g[p + "yr"]:
        return [_year(int(g[p + "yr"] or 0))], True
    if g[p + "wd"]:
        return _weekday(g[p + "wq"], (g[p + "wdn"] or "").casefold(), ref)
    if g[p + "rel"]:
        word = (g[p + "rel"] or "").casefold()
        if word == "now":
            return [_Unit(ref, ref)], True
        offset = {"today": 0, "tonight": 0, "tomorrow": 1, "yesterday": -1}[word]
        return [_day(ref.date() + timedelta(days=offset))], True
    period = (g[p + "pu"] or "").casefold()
    step = {"this": 0, "next": 1, "last": -1}[(g[p + "pq"] or "").casefold()]
    return [_shift(period, _period(period, ref), step)], True


def _weekday(qualifier: str | None, name: str, ref: datetime) -> tuple[list[_Unit], bool]:
    today = ref.date()
    ahead = (_WEEKDAYS.index(name) - today.weekday()) % 7
    if qualifier is None:
        return [_day(today + timedelta(days=ahead + 7 * k)) for k in (-1, 0, 1, 2)], False
    word = qualifier.casefold()
    if word == "next":
        return [_day(today + timedelta(days=ahead or 7))], True
    if word == "last":
        return [_day(today - timedelta(days=(7 - ahead) % 7 or 7))], True
    return [_day(today + timedelta(days=ahead))], True


def _first(units: list[_Unit], fixed: bool, ok: Callable[[_Unit], bool]) -> _Unit | None:
    """The first unit satisfying ``ok``; a fixed date must satisfy it itself."""
    if fixed:
        return units[0] if units and ok(units[0]) else None
    return next((u for u in units if ok(u)), None)


def _start(g: Mapping[str, str | None], p: str, ref: datetime) -> datetime | None:
    units, fixed = _candidates(g, p, ref)
    if fixed:
        return units[0].start if units else None
    unit = _first(units, fixed, lambda u: u.end > ref)
    return None if unit is None else unit.start


def _end(
    g: Mapping[str, str | None], p: str, ref: datetime, *, after: datetime, inclusive: bool
) -> datetime | None:
    units, fixed = _candidates(g, p, ref)
    if inclusive:
        unit = _first(units, fixed, lambda u: u.end > after)
        return None if unit is None else unit.end
    unit = _first(units, fixed, lambda u: u.start > after)
    return None if unit is None else unit.start


def _since(g: Mapping[str, str | None], p: str, ref: datetime) -> datetime | None:
    units, fixed = _candidates(g, p, ref)
    if fixed:
        return units[0].start if units and units[0].start <= ref else None
    begun = [u for u in units if u.start <= ref]
    return begun[-1].start if begun else None


_Bounds = tuple[datetime | None, datetime | None, Form]


def _range(m: re.Match[str], ref: datetime) -> _Bounds | None:
    start = _start(m.groupdict(), "a", ref)
    if start is None:
        return None
    inclusive = (m.group("conn") or "-").casefold() not in ("until", "till", "til", "'til")
    end = _end(m.groupdict(), "b", ref, after=max(start, ref), inclusive=inclusive)
    return None if end is None else (start, end, "range")


def _open_start(m: re.Match[str], ref: datetime) -> _Bounds | None:
    start = _start(m.groupdict(), "a", ref)
    return None if start is None else (start, None, "start")


def _until(m: re.Match[str], ref: datetime) -> _Bounds | None:
    inclusive = m.group("conn").casefold() in ("through", "thru")
    end = _end(m.groupdict(), "a", ref, after=ref, inclusive=inclusive)
    return None if end is None else (None, end, "end")


def _since_start(m: re.Match[str], ref: datetime) -> _Bounds | None:
    start = _since(m.groupdict(), "a", ref)
    return None if start is None else (start, None, "since")


def _rest(m: re.Match[str], ref: datetime) -> _Bounds | None:
    if m.group("rm"):
        month = month_number(m.group("rm"))
        units = [_month(y, month) for y in range(ref.year, ref.year + 2)]
        unit = next(u for u in units if u.end > ref)
    else:
        unit = _period((m.group("ru") or "day").casefold(), ref)
    return (max(ref, unit.start), unit.end, "rest")


_WINDOW_KINDS = {
    "on": ("md", "dm", "iso", "wd"),
    "in": ("mo", "yr"),
    "": ("md", "dm", "iso", "wd", "rel", "per"),
}


def _window(m: re.Match[str], ref: datetime) -> _Bounds | None:
    g = m.groupdict()
    lead = (m.group("lead") or "").strip().casefold()
    if not any(g["a" + kind] for kind in _WINDOW_KINDS[lead]):
        return None
    if not lead:
        if g["awd"] and not g["awq"]:
            return None
        word = (g["arel"] or g["apq"] or g["awq"] or "").casefold()
        if word in ("now", "yesterday", "last"):
            return None
    units, fixed = _candidates(g, "a", ref)
    unit = _first(units, fixed, lambda u: u.end > ref)
    return None if unit is None else (unit.start, unit.end, "window")


def _open(m: re.Match[str], ref: datetime) -> _Bounds | None:
    return (None, None, "open")


_RULES: tuple[tuple[re.Pattern[str], Callable[[re.Match[str], datetime], _Bounds | None]], ...] = (
    (_RANGE, _range),
    (_START, _open_start),
    (_OPEN, _open),
    (_UNTIL, _until),
    (_SINCE, _since_start),
    (_REST, _rest),
    (_WINDOW, _window),
)


NUMBER_WORDS: dict[str, int] = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
"""Counts written as words ("two weeks ago", "a month"), shared with question reading."""
_AGO = re.compile(
    r"""\b(?:(?:about|around|almost|nearly|roughly|maybe|just|only|over|more\s+than|less\s+than
        |under)\s+)?
    (?:(?P<couple>(?:a\s+)?couple(?:\s+of)?)|(?P<n>\d{1,4}|an?|one|two|three|four|five|six|seven
        |eight|nine|ten|eleven|twelve))
    (?P<half1>\s+and\s+a\s+half)?\s+(?P<unit>minute|hour|day|week|fortnight|month|year|decade)s?
    (?P<half2>\s+and\s+a\s+half)?\s+(?:ago|back|earlier)(?![\w-])""",
    _FLAGS,
)
_LAST = re.compile(
    rf"\b(?:(?:last|this\s+past)\s+(?:(?P<unit>week|weekend|month|year)|(?P<wd>{_WEEKDAY}))"
    r"|over\s+the\s+(?:long\s+)?(?P<over>weekend)|(?P<night>last\s+night)|(?P<yday>yesterday)"
    r"|earlier\s+(?:this\s+(?P<early>week|month|year)|(?P<today>today)))(?![\w-])",
    _FLAGS,
)
_BACK_IN = re.compile(
    rf"\b(?:(?P<back>back\s+)?in\s+(?P<year>{_YEAR})|back\s+in\s+(?P<month>{_MONTH}))(?![\w-])",
    _FLAGS,
)
_VAGUE = re.compile(
    r"""\b(?:a\s+(?:little\s+|long\s+|good\s+)?while\s+(?:ago|back)|(?:some|a\s+long)\s+time
        \s+(?:ago|back)|ages\s+ago|(?:a\s+few|few|several|some|many)\s+(?:minutes|hours|days|weeks
        |months|years)\s+(?:ago|back|earlier)|recently|lately|of\s+late|these\s+days|nowadays
        |at\s+the\s+moment|at\s+present|right\s+now|currently
        |(?:over|during)\s+the\s+(?:summer|winter|spring|autumn|fall|holidays|break)
        |(?:last|this\s+past)\s+(?:summer|winter|spring|autumn|fall))(?![\w-])""",
    _FLAGS,
)


def _back(ref: datetime, unit: str, count: int) -> datetime:
    """``count`` units before ``ref``: exact for minutes and hours, else the start of the day."""
    if unit in ("minute", "hour"):
        return ref - timedelta(**{unit + "s": count})
    days = {"day": 1, "week": 7, "fortnight": 14}.get(unit)
    if days is not None:
        return _day(ref.date() - timedelta(days=days * count)).start
    months = count * {"month": 1, "year": 12, "decade": 120}[unit]
    index = ref.year * 12 + ref.month - 1 - months
    year, month = index // 12, index % 12 + 1
    last = (_month(year, month).end - timedelta(days=1)).day
    return _day(date(year, month, min(ref.day, last))).start


_HALVES = {
    "minute": ("minute", 1, 0),
    "hour": ("minute", 60, 30),
    "day": ("hour", 24, 12),
    "week": ("day", 7, 3),
    "fortnight": ("day", 14, 7),
    "month": ("day", 30, 15),
    "year": ("month", 12, 6),
    "decade": ("month", 120, 60),
}
"""A unit and a half, in a smaller unit: ``(smaller unit, per unit, the half)``."""


def _ago(m: re.Match[str], ref: datetime) -> _Bounds | None:
    count = (
        2 if m.group("couple") else NUMBER_WORDS.get(m.group("n").casefold()) or int(m.group("n"))
    )
    unit = m.group("unit").casefold()
    if m.group("half1") or m.group("half2"):  # "two and a half years ago", "a year and a half ago"
        unit, per, half = _HALVES[unit]
        count = count * per + half
    return (_back(ref, unit, count), None, "past")


def _last(m: re.Match[str], ref: datetime) -> _Bounds | None:
    today = ref.date()
    if m.group("yday") or m.group("night"):
        return (_day(today - timedelta(days=1)).start, None, "past")
    if m.group("today"):
        return (_day(today).start, None, "past")
    if m.group("early"):
        return (_period(m.group("early").casefold(), ref).start, None, "past")
    if m.group("wd"):
        ahead = (_WEEKDAYS.index(m.group("wd").casefold()) - today.weekday()) % 7
        return (_day(today - timedelta(days=(7 - ahead) % 7 or 7)).start, None, "past")
    unit = (m.group("unit") or m.group("over")).casefold()
    if unit == "weekend":
        saturday = today - timedelta(days=(today.weekday() - 5) % 7)
        if m.group("unit") and saturday + timedelta(days=1) >= today:  # "last weekend" on a weekend
            saturday -= timedelta(days=7)
        return (_day(saturday).start, None, "past")
    return (_shift(unit, _period(unit, ref), -1).start, None, "past")


def _back_in(m: re.Match[str], ref: datetime) -> _Bounds | None:
    if m.group("year"):
        year = int(m.group("year"))
        return (_year(year).start, None, "past") if year < ref.year else None
    month = month_number(m.group("month"))
    year = ref.year if month <= ref.month else ref.year - 1
    return (_month(year, month).start, None, "past")


def _vague(m: re.Match[str], ref: datetime) -> _Bounds | None:
    return (None, None, "vague")


_PAST: tuple[tuple[re.Pattern[str], Callable[[re.Match[str], datetime], _Bounds | None]], ...] = (
    (_AGO, _ago),
    (_LAST, _last),
    (_BACK_IN, _back_in),
    (_VAGUE, _vague),
)


def _valid(bounds: _Bounds, ref: datetime) -> bool:
    start, end, _ = bounds
    if end is None:
        return True
    return end > ref and (start is None or start < end)


def _matches(text: str, ref: datetime, *, past: bool) -> Iterator[TimePhrase]:
    for pattern, resolve in _RULES + _PAST if past else _RULES:
        for m in pattern.finditer(text):
            try:
                bounds = resolve(m, ref)
            except (ValueError, OverflowError):  # beyond year 1 or 9999: not a phrase
                continue
            if bounds is None or not _valid(bounds, ref):
                continue
            yield TimePhrase(
                start=bounds[0],
                end=bounds[1],
                phrase=m.group(),
                span=m.span(),
                form=bounds[2],
            )


def find_all(text: str, reference: datetime, *, past: bool = False) -> tuple[TimePhrase, ...]:
    """Every time phrase in ``text``, in order, none overlapping another: where
    candidates overlap, the one starting first wins, then the longest. ``past``
    adds the phrases of the past and the vague ones (see the module docstring).

    ``reference`` must be timezone-aware (:class:`~memledger.errors.InvalidIntervalError`
    otherwise); it is read in UTC.
    """
    ref = require_aware(reference, "reference", InvalidIntervalError)
    found = sorted(
        _matches(text, ref, past=past), key=lambda t: (t.span[0], -(t.span[1] - t.span[0]))
    )
    chosen: list[TimePhrase] = []
    for phrase in found:
        if chosen and phrase.span[0] < chosen[-1].span[1]:
            continue
        chosen.append(phrase)
    return tuple(chosen)


def find(text: str, reference: datetime) -> TimePhrase | None:
    """The first time phrase in ``text`` (see :func:`find_all`), or ``None``."""
    phrases = find_all(text, reference)
    return phrases[0] if phrases else None
