"""Valid-time phrases (``memledger.domain.timephrases``) and the text helpers the rule
extractor builds on (``memledger.domain.text``).

Reference instants are UTC unless a test says otherwise; 2026-10-19 is a Monday.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memledger.domain.records import require_id
from memledger.domain.text import clauses, normalize, sentences, slug, stem
from memledger.domain.timephrases import TimePhrase, find, find_all
from memledger.errors import InvalidClaimError, InvalidIntervalError

FAST = settings(max_examples=150, deadline=None)
MON = datetime(2026, 10, 19, 9, 0, tzinfo=UTC)
"""Monday, October 19 2026, 09:00 UTC: the seed-000 event's day."""


def day(year: int, month: int, dom: int) -> datetime:
    return datetime(year, month, dom, tzinfo=UTC)


def only(text: str, reference: datetime = MON) -> TimePhrase:
    phrases = find_all(text, reference)
    assert len(phrases) == 1, phrases
    return phrases[0]


# -- the phrases the extractor relies on ---------------------------------------------------


@pytest.mark.parametrize(
    ("text", "start", "end", "form"),
    [
        ("from November 1", day(2026, 11, 1), None, "start"),
        ("starting November 1", day(2026, 11, 1), None, "start"),
        ("from Nov 1st", day(2026, 11, 1), None, "start"),
        ("from Nov. 1, 2027", day(2027, 11, 1), None, "start"),
        ("from the 1st of November", day(2026, 11, 1), None, "start"),
        ("from 1 November onwards", day(2026, 11, 1), None, "start"),
        ("as of 2026-12-24", day(2026, 12, 24), None, "start"),
        ("until Friday", None, day(2026, 10, 23), "end"),
        ("till Friday", None, day(2026, 10, 23), "end"),
        ("'til Friday", None, day(2026, 10, 23), "end"),
        ("through Friday", None, day(2026, 10, 24), "end"),
        ("through October 31", None, day(2026, 11, 1), "end"),
        ("thru Oct 31", None, day(2026, 11, 1), "end"),
        ("until November", None, day(2026, 11, 1), "end"),
        ("until the end of the month", None, day(2026, 11, 1), "end"),
        ("through the end of October", None, day(2026, 11, 1), "end"),
        ("until the end of the year", None, day(2027, 1, 1), "end"),
        ("for the rest of October", MON, day(2026, 11, 1), "rest"),
        ("for the rest of the month", MON, day(2026, 11, 1), "rest"),
        ("for the rest of this week", MON, day(2026, 10, 26), "rest"),
        ("for the rest of the year", MON, day(2027, 1, 1), "rest"),
        ("for the rest of today", MON, day(2026, 10, 20), "rest"),
        ("since January", day(2026, 1, 1), None, "since"),
        ("since 2024", day(2024, 1, 1), None, "since"),
        ("since last year", day(2025, 1, 1), None, "since"),
        ("since last month", day(2026, 9, 1), None, "since"),
        ("since last week", day(2026, 10, 12), None, "since"),
        ("since yesterday", day(2026, 10, 18), None, "since"),
        ("since Monday", day(2026, 10, 19), None, "since"),
        ("since Friday", day(2026, 10, 16), None, "since"),
        ("since last Friday", day(2026, 10, 16), None, "since"),
        ("since November 5", day(2025, 11, 5), None, "since"),
        ("from now on", MON, None, "start"),
        ("starting now", MON, None, "start"),
        ("from today", day(2026, 10, 19), None, "start"),
        ("starting tomorrow", day(2026, 10, 20), None, "start"),
        ("starting next week", day(2026, 10, 26), None, "start"),
        ("from next month", day(2026, 11, 1), None, "start"),
        ("starting next Friday", day(2026, 10, 23), None, "start"),
        ("next month", day(2026, 11, 1), day(2026, 12, 1), "window"),
        ("next week", day(2026, 10, 26), day(2026, 11, 2), "window"),
        ("next year", day(2027, 1, 1), day(2028, 1, 1), "window"),
        ("this week", day(2026, 10, 19), day(2026, 10, 26), "window"),
        ("this month", day(2026, 10, 1), day(2026, 11, 1), "window"),
        ("tomorrow", day(2026, 10, 20), day(2026, 10, 21), "window"),
        ("today", day(2026, 10, 19), day(2026, 10, 20), "window"),
        ("tonight", day(2026, 10, 19), day(2026, 10, 20), "window"),
        ("on Friday", day(2026, 10, 23), day(2026, 10, 24), "window"),
        ("this Friday", day(2026, 10, 23), day(2026, 10, 24), "window"),
        ("next Friday", day(2026, 10, 23), day(2026, 10, 24), "window"),
        ("on Monday", day(2026, 10, 19), day(2026, 10, 20), "window"),
        ("next Monday", day(2026, 10, 26), day(2026, 10, 27), "window"),
        ("on November 3", day(2026, 11, 3), day(2026, 11, 4), "window"),
        ("in March", day(2027, 3, 1), day(2027, 4, 1), "window"),
        ("in 2027", day(2027, 1, 1), day(2028, 1, 1), "window"),
        ("from Monday until Friday", day(2026, 10, 19), day(2026, 10, 23), "range"),
        ("from Monday to Friday", day(2026, 10, 19), day(2026, 10, 24), "range"),
        ("from Monday through Friday", day(2026, 10, 19), day(2026, 10, 24), "range"),
        ("between Nov 1 and Nov 5", day(2026, 11, 1), day(2026, 11, 6), "range"),
        ("from November 1 until January 10", day(2026, 11, 1), day(2027, 1, 10), "range"),
        ("from now until the end of October", MON, day(2026, 11, 1), "range"),
        ("until further notice", None, None, "open"),
    ],
)
def test_phrase(text: str, start: datetime | None, end: datetime | None, form: str) -> None:
    phrase = only(f"send it {text} please")
    assert (phrase.start, phrase.end, phrase.form) == (start, end, form)
    assert phrase.phrase == text
    assert f"send it {text} please"[phrase.span[0] : phrase.span[1]] == text


def test_seed_000_sentence_has_two_windows() -> None:
    text = "Daily for the rest of October please, then Friday again from November 1."
    rest, friday = find_all(text, MON)
    assert (rest.phrase, rest.start, rest.end) == ("for the rest of October", MON, day(2026, 11, 1))
    assert (friday.phrase, friday.start, friday.end) == ("from November 1", day(2026, 11, 1), None)
    assert text[friday.span[0] : friday.span[1]] == "from November 1"


@pytest.mark.parametrize(
    ("reference", "start"),
    [
        (datetime(2026, 10, 31, 23, 59, tzinfo=UTC), day(2026, 11, 1)),
        (datetime(2026, 11, 1, 0, 0, tzinfo=UTC), day(2026, 11, 1)),
        (datetime(2026, 11, 1, 18, 0, tzinfo=UTC), day(2026, 11, 1)),
        (datetime(2026, 11, 2, 0, 0, tzinfo=UTC), day(2027, 11, 1)),
        (datetime(2026, 12, 31, 12, 0, tzinfo=UTC), day(2027, 11, 1)),
    ],
)
def test_a_start_without_year_is_the_next_on_or_after_the_reference_day(
    reference: datetime, start: datetime
) -> None:
    assert only("from November 1", reference).start == start


def test_until_a_weekday_on_that_weekday_is_next_week() -> None:
    friday = datetime(2026, 10, 23, 8, tzinfo=UTC)
    assert only("until Friday", friday).end == day(2026, 10, 30)
    assert only("through Friday", friday).end == day(2026, 10, 24)


def test_february_29_finds_the_next_leap_year() -> None:
    assert only("from February 29", day(2026, 3, 1)).start == day(2028, 2, 29)


def test_the_rest_of_a_coming_month_runs_from_the_reference() -> None:
    september = datetime(2026, 9, 10, 12, tzinfo=UTC)
    phrase = only("for the rest of October", september)
    assert (phrase.start, phrase.end) == (day(2026, 10, 1), day(2026, 11, 1))


@pytest.mark.parametrize(
    "text",
    [
        "",
        "no dates here",
        "Friday again",
        "send it on Fridays",
        "every Friday",
        "I work at Friday Labs",
        "I may go",
        "since 2030",
        "until 2020",
        "until now",
        "until yesterday",
        "through last week",
        "from November 31",
        "on 2026-02-30",
        "last Friday",
        "yesterday",
        "from 2 to 3",
        "for the rest",
    ],
)
def test_not_a_phrase(text: str) -> None:
    assert find_all(text, MON) == ()
    assert find(text, MON) is None


def test_a_past_explicit_start_is_kept() -> None:
    assert only("from January 2020").start == day(2020, 1, 1)


def test_first_and_longest_wins_and_phrases_do_not_overlap() -> None:
    text = "starting next week until further notice, and tomorrow"
    got = find_all(text, MON)
    assert [p.phrase for p in got] == ["starting next week", "until further notice", "tomorrow"]
    assert find(text, MON) == got[0]


def test_reference_in_another_zone_is_read_in_utc() -> None:
    ist = timezone(timedelta(hours=5, minutes=30))
    reference = datetime(2026, 10, 20, 2, 0, tzinfo=ist)  # Oct 19, 20:30 UTC
    phrase = only("tomorrow", reference)
    assert (phrase.start, phrase.end) == (day(2026, 10, 20), day(2026, 10, 21))
    assert phrase.start is not None and phrase.start.tzinfo is UTC


def test_naive_reference_is_a_caller_mistake() -> None:
    with pytest.raises(InvalidIntervalError, match="timezone-aware"):
        find_all("tomorrow", datetime(2026, 10, 19))


# -- properties ------------------------------------------------------------------------------

references = st.datetimes(
    min_value=datetime(2001, 1, 1), max_value=datetime(2040, 12, 31), timezones=st.just(UTC)
)
MONTHS = (
    "January February March April May June July August September October November "
    "December Jan Feb Mar Apr Jun Jul Aug Sep Sept Oct Nov Dec"
).split()
WEEKDAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
RELATIVE = "today tomorrow tonight yesterday now".split()


@st.composite
def dates(draw: st.DrawFn) -> str:
    month = draw(st.sampled_from(MONTHS))
    dom = draw(st.integers(1, 31))
    year = draw(st.integers(1995, 2045))
    return draw(
        st.sampled_from(
            [
                f"{month} {dom}",
                f"{month} {dom}{draw(st.sampled_from(['st', 'nd', 'rd', 'th']))}",
                f"{month} {dom}, {year}",
                f"{dom} {month}",
                f"the {dom}th of {month}",
                f"{year}-{draw(st.integers(1, 12)):02d}-{dom:02d}",
                month,
                f"{month} {year}",
                str(year),
                draw(st.sampled_from(WEEKDAYS)),
                f"{draw(st.sampled_from(['this', 'next', 'last', 'coming']))} "
                f"{draw(st.sampled_from(WEEKDAYS))}",
                draw(st.sampled_from(RELATIVE)),
                f"{draw(st.sampled_from(['this', 'next', 'last']))} "
                f"{draw(st.sampled_from(['week', 'month', 'year']))}",
                "the end of "
                + draw(st.sampled_from(["the week", "the month", "this year", month])),
            ]
        )
    )


@st.composite
def phrases(draw: st.DrawFn) -> str:
    a, b = draw(dates()), draw(dates())
    return draw(
        st.sampled_from(
            [
                f"from {a}",
                f"starting {a}",
                f"as of {a}",
                f"until {a}",
                f"till {a}",
                f"through {a}",
                f"since {a}",
                f"from {a} until {b}",
                f"from {a} to {b}",
                f"between {a} and {b}",
                f"on {a}",
                f"in {a}",
                a,
                f"for the rest of {draw(st.sampled_from(['the week', 'the month', *MONTHS]))}",
                "from now on",
                "until further notice",
            ]
        )
    )


def check_invariants(text: str, reference: datetime, found: tuple[TimePhrase, ...]) -> None:
    last_end = 0
    for phrase in found:
        start, end = phrase.span
        assert last_end <= start < end <= len(text)
        assert text[start:end] == phrase.phrase
        last_end = end
        for bound in (phrase.start, phrase.end):
            assert bound is None or bound.tzinfo is UTC
        if phrase.start is not None and phrase.end is not None:
            assert phrase.start < phrase.end
        if phrase.end is not None:
            assert phrase.end > reference


@FAST
@given(phrase=phrases(), reference=references, before=st.text(max_size=10))
def test_generated_phrases_keep_the_invariants(
    phrase: str, reference: datetime, before: str
) -> None:
    text = f"{before} {phrase}. ok"
    found = find_all(text, reference)
    check_invariants(text, reference, found)
    assert find_all(text, reference) == found


@pytest.mark.parametrize(
    "reference",
    [datetime(9999, 12, 31, 23, tzinfo=UTC), datetime(1, 1, 1, 1, tzinfo=UTC)],
)
def test_the_ends_of_the_calendar_do_not_raise(reference: datetime) -> None:
    text = "since January, next year, until Friday, tomorrow, in March, from November 1"
    check_invariants(text, reference, find_all(text, reference))


@FAST
@given(text=st.text(max_size=80), reference=st.datetimes(timezones=st.just(UTC)))
def test_arbitrary_text_never_raises(text: str, reference: datetime) -> None:
    check_invariants(text, reference, find_all(text, reference))


@FAST
@given(reference=references, month=st.integers(1, 12), dom=st.integers(1, 28))
def test_from_a_date_is_the_first_such_day_not_over(
    reference: datetime, month: int, dom: int
) -> None:
    name = date(2001, month, 1).strftime("%B")
    start = only(f"from {name} {dom}", reference).start
    assert start is not None and (start.month, start.day, start.hour) == (month, dom, 0)
    assert start + timedelta(days=1) > reference
    assert start.replace(year=start.year - 1) + timedelta(days=1) <= reference


@FAST
@given(reference=references, month=st.integers(1, 12), dom=st.integers(1, 28))
def test_through_a_date_ends_the_day_after_it(reference: datetime, month: int, dom: int) -> None:
    name = date(2001, month, 1).strftime("%b")
    end = only(f"through {name} {dom}", reference).end
    assert end is not None and end > reference
    last = end - timedelta(days=1)
    assert (last.month, last.day) == (month, dom)
    assert last.replace(year=last.year - 1) + timedelta(days=1) <= reference


@FAST
@given(reference=references, weekday=st.sampled_from(WEEKDAYS))
def test_until_a_weekday_is_the_next_one_after_the_reference(
    reference: datetime, weekday: str
) -> None:
    end = only(f"until {weekday}", reference).end
    assert end is not None and end.strftime("%A") == weekday
    assert reference < end <= reference + timedelta(days=7)


@FAST
@given(reference=references, month=st.integers(1, 12))
def test_since_a_month_is_its_latest_start(reference: datetime, month: int) -> None:
    name = date(2001, month, 1).strftime("%B")
    start = only(f"since {name}", reference).start
    assert start is not None and (start.month, start.day) == (month, 1)
    assert start <= reference < start.replace(year=start.year + 1)


# -- text helpers ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The NeurIPS Submission", "neurips-submission"),
        ("my favourite café in Zürich", "favourite-cafe-zurich"),
        ("Straße", "strasse"),
        ("I don't know", "dont-know"),
        ("the", "the"),
        ("a my the", "a-my-the"),
        ("!!!", ""),
        ("", ""),
        ("PyTorch 2.1", "pytorch-2-1"),
    ],
)
def test_slug(text: str, expected: str) -> None:
    assert slug(text) == expected


def test_slug_of_other_scripts_is_a_stable_hash() -> None:
    tokyo = slug("東京")
    assert re.fullmatch(r"u[0-9a-f]{8}", tokyo)
    assert slug("東京") == tokyo != slug("大阪")
    assert slug("東京 tower") == f"{tokyo}-tower"


def test_slug_stemming_makes_inflections_agree() -> None:
    pairs = [
        ("review flashcards", "reviewing flashcards"),
        ("run", "running"),
        ("make coffee", "making coffee"),
        ("use vim", "using vim"),
        ("study", "studies"),
        ("watch movies", "watching movie"),
    ]
    for a, b in pairs:
        assert slug(a, stem_words=True) == slug(b, stem_words=True), (a, b)
    assert slug("reviewing flashcards", stem_words=True) == "review-flashcard"
    assert slug("NeurIPS Paris", stem_words=True) == "neurips-paris"  # names are not stemmed


def test_slug_drop_words_and_limits() -> None:
    assert slug("planning a trip to Japan", drop=["planning", "trip"]) == "japan"
    assert slug("plan", drop=["plan"]) == "plan"
    long = slug(" ".join(f"word{i}" for i in range(30)))
    assert long.count("-") == 7
    assert len(slug("x" * 300)) == 80


@pytest.mark.parametrize(
    ("word", "stemmed"),
    [("bring", "bring"), ("thing", "thing"), ("seeing", "see"), ("calling", "call")],
)
def test_stem_leaves_what_it_cannot_shorten(word: str, stemmed: str) -> None:
    assert stem(word) == stemmed


@FAST
@given(text=st.text(max_size=60), stem_words=st.booleans())
def test_slug_is_identifier_safe_and_deterministic(text: str, stem_words: bool) -> None:
    key = slug(text, stem_words=stem_words)
    assert key == slug(text, stem_words=stem_words)
    assert re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*|", key)
    assert len(key) <= 80
    has_alnum = re.search(r"[^\W_]", text) is not None
    assert bool(key) == has_alnum
    if key:
        for prefix in ("item", "plan", "habit", "work", "tool", "person"):
            require_id(f"{prefix}:{key}", "scope", InvalidClaimError)


def test_sentences_respect_abbreviations_and_questions() -> None:
    text = "Dr. Smith moved to St. Louis on Nov. 3. Did he? Yes; fine\nnext line"
    got = sentences(text)
    assert [s.text for s in got] == [
        "Dr. Smith moved to St. Louis on Nov. 3",
        "Did he",
        "Yes",
        "fine",
        "next line",
    ]
    assert [s.question for s in got] == [False, True, False, False, False]


def test_clauses_split_at_connectives() -> None:
    text = (
        "Daily for the rest of October please, then Friday again from November 1. "
        "I love PyTorch, but I moved to JAX; I live in Paris, France and I work at X, "
        "I think — really"
    )
    assert [c.text for c in clauses(text)] == [
        "Daily for the rest of October please",
        "Friday again from November 1",
        "I love PyTorch",
        "I moved to JAX",
        "I live in Paris, France",
        "I work at X",
        "I think",
        "really",
    ]


@FAST
@given(text=st.text(alphabet=st.sampled_from(list("ab I,.?;—\n thenbut")), max_size=60))
def test_clauses_are_ordered_trimmed_substrings(text: str) -> None:
    end = 0
    for clause in clauses(text):
        assert end <= clause.start < clause.end <= len(text)
        assert text[clause.start : clause.end] == clause.text == clause.text.strip()
        end = clause.end


def test_normalize() -> None:
    assert normalize("  I’m   “based”\n in  Delhi ") == 'I\'m "based" in Delhi'
