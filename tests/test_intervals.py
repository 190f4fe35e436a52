"""Property tests of the valid-time algebra (DESIGN invariant 4: no overlaps).

Every interval the strategies build has its bounds in one small pool of UTC
instants (or is open-ended), so membership is constant between consecutive pool
points. Probing every pool point, the instant just before it, the midpoints and
a point past the last one therefore checks each pointwise equation exhaustively,
bounds included.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta, timezone, tzinfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memledger.domain.intervals import (
    Interval,
    Reconciliation,
    Remnant,
    Window,
    at,
    first_overlap,
    reconcile,
    subtract,
)
from memledger.errors import InvalidIntervalError

FAST = settings(max_examples=150, deadline=None)
US = timedelta(microseconds=1)
FAR_FUTURE = datetime(2100, 1, 1, tzinfo=UTC)

instants = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2040, 12, 31), timezones=st.just(UTC)
)
naive_instants = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2040, 12, 31))
pools = st.lists(instants, min_size=1, max_size=8, unique=True).map(sorted)
Case = tuple[list[datetime], list[Window], list[Interval]]
"""A reconcile scenario: the probe pool, an existing timeline and one event's intervals."""


def probes(pool: Sequence[datetime]) -> list[datetime]:
    points = {pool[-1] + timedelta(days=1), FAR_FUTURE}
    for p in pool:
        points |= {p, p - US, p + US}
    for a, b in itertools.pairwise(pool):
        points.add(a + (b - a) / 2)
    return sorted(points)


@st.composite
def interval_in(draw: st.DrawFn, pool: Sequence[datetime]) -> Interval:
    start = draw(st.sampled_from(pool))
    later = [p for p in pool if p > start]
    end = draw(st.none() | st.sampled_from(later)) if later else None
    return Interval(start, end)


@st.composite
def timeline_in(draw: st.DrawFn, pool: Sequence[datetime]) -> list[Interval]:
    """Pairwise disjoint intervals (adjacent ones included) in shuffled order."""
    bounds = sorted(draw(st.lists(st.sampled_from(pool), unique=True)))
    intervals = [Interval(a, b) for a, b in itertools.pairwise(bounds) if draw(st.booleans())]
    open_end = draw(st.booleans())
    if bounds and open_end:
        intervals.append(Interval(bounds[-1], None))
    return draw(st.permutations(intervals))


@st.composite
def pool_and_two(draw: st.DrawFn) -> tuple[list[datetime], Interval, Interval]:
    pool = draw(pools)
    return pool, draw(interval_in(pool)), draw(interval_in(pool))


@st.composite
def scenarios(draw: st.DrawFn) -> Case:
    pool = draw(pools)
    existing = [Window(f"w{i}", iv) for i, iv in enumerate(draw(timeline_in(pool)))]
    return pool, existing, draw(timeline_in(pool))


def covering(intervals: Sequence[Interval], moment: datetime) -> list[Interval]:
    return [i for i in intervals if i.contains(moment)]


def inside(inner: Interval, outer: Interval) -> bool:
    ends_in = outer.end is None or (inner.end is not None and inner.end <= outer.end)
    return outer.start <= inner.start and ends_in


def pairwise_disjoint(intervals: Sequence[Interval]) -> bool:
    return not any(a.overlaps(b) for a, b in itertools.combinations(intervals, 2))


def untouched(existing: Sequence[Window], result: Reconciliation) -> list[Window]:
    return [w for w in existing if w.key not in result.closed]


def new_timeline(existing: Sequence[Window], result: Reconciliation) -> list[Window]:
    """The timeline after applying ``result``: untouched + remnants + installed."""
    return [
        *untouched(existing, result),
        *(Window(f"remnant{i}", r.interval) for i, r in enumerate(result.remnants)),
        *(Window(f"installed{i}", iv) for i, iv in enumerate(result.installed)),
    ]


# -- construction ------------------------------------------------------------


@FAST
@given(instants, st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=400)))
def test_end_not_after_start_is_rejected(start: datetime, back: timedelta) -> None:
    with pytest.raises(InvalidIntervalError):
        Interval(start, start - back)


@FAST
@given(naive_instants, st.timedeltas(min_value=US, max_value=timedelta(days=400)))
def test_naive_bounds_are_rejected(naive: datetime, length: timedelta) -> None:
    aware = naive.replace(tzinfo=UTC)
    with pytest.raises(InvalidIntervalError):
        Interval(naive)
    with pytest.raises(InvalidIntervalError):
        Interval(naive, naive + length)
    with pytest.raises(InvalidIntervalError):
        Interval(aware, naive + length)
    with pytest.raises(InvalidIntervalError):
        Interval(naive, aware + length)


class _NoOffset(tzinfo):
    """A tzinfo that knows no offset: Python treats such datetimes as naive."""

    def utcoffset(self, dt: datetime | None) -> timedelta | None:
        return None

    def dst(self, dt: datetime | None) -> timedelta | None:
        return None

    def tzname(self, dt: datetime | None) -> str | None:
        return None


def test_tzinfo_without_offset_counts_as_naive() -> None:
    start = datetime(2025, 10, 2, tzinfo=UTC)
    with pytest.raises(InvalidIntervalError):
        Interval(datetime(2025, 10, 2, tzinfo=_NoOffset()))
    with pytest.raises(InvalidIntervalError):
        Interval(start, datetime(2025, 10, 9, tzinfo=_NoOffset()))


def test_bounds_in_other_zones_compare_as_instants() -> None:
    plus2 = timezone(timedelta(hours=2))
    local = Interval(datetime(2025, 10, 2, 2, tzinfo=plus2), datetime(2025, 10, 3, 2, tzinfo=plus2))
    assert local == Interval(datetime(2025, 10, 2, tzinfo=UTC), datetime(2025, 10, 3, tzinfo=UTC))
    assert local.contains(datetime(2025, 10, 2, tzinfo=UTC))
    assert not local.contains(datetime(2025, 10, 3, tzinfo=UTC))
    assert not local.overlaps(Interval(datetime(2025, 10, 3, tzinfo=UTC)))


# -- single intervals --------------------------------------------------------


@FAST
@given(pools.flatmap(lambda pool: interval_in(pool)))
def test_contains_is_half_open(interval: Interval) -> None:
    assert interval.contains(interval.start)
    assert not interval.contains(interval.start - US)
    if interval.end is None:
        assert interval.contains(FAR_FUTURE)
    else:
        assert interval.contains(interval.end - US)
        assert not interval.contains(interval.end)


@FAST
@given(pool_and_two())
def test_overlaps_and_intersection_agree_pointwise(
    case: tuple[list[datetime], Interval, Interval],
) -> None:
    pool, a, b = case
    both = a.intersection(b)
    assert a.overlaps(b) == b.overlaps(a) == (both is not None)
    assert both == b.intersection(a)
    for t in probes(pool):
        assert (a.contains(t) and b.contains(t)) == (both is not None and both.contains(t))
    if both is not None:
        assert inside(both, a) and inside(both, b)


@FAST
@given(pool_and_two())
def test_minus_leaves_disjoint_pieces_that_rebuild_self(
    case: tuple[list[datetime], Interval, Interval],
) -> None:
    pool, a, b = case
    pieces = a.minus(b)
    both = a.intersection(b)
    assert len(pieces) <= 2
    assert pairwise_disjoint(pieces)
    assert all(inside(p, a) and not p.overlaps(b) for p in pieces)
    if not a.overlaps(b):
        assert pieces == (a,)
    for t in probes(pool):
        in_pieces = len(covering(pieces, t))
        in_both = both is not None and both.contains(t)
        assert in_pieces + in_both == (1 if a.contains(t) else 0)


@FAST
@given(pools.flatmap(lambda pool: st.tuples(st.just(pool), interval_in(pool))))
def test_minus_itself_leaves_nothing(case: tuple[list[datetime], Interval]) -> None:
    _, a = case
    assert a.minus(a) == ()
    assert subtract(a, []) == (a,)


@FAST
@given(
    pools.flatmap(
        lambda pool: st.tuples(
            st.just(pool), interval_in(pool), st.lists(interval_in(pool), max_size=5)
        )
    )
)
def test_subtract_covers_exactly_the_uncut_points(
    case: tuple[list[datetime], Interval, list[Interval]],
) -> None:
    pool, interval, cuts = case
    pieces = subtract(interval, cuts)
    assert all(inside(p, interval) for p in pieces)
    for t in probes(pool):
        expected = interval.contains(t) and not covering(cuts, t)
        assert len(covering(pieces, t)) == (1 if expected else 0)
    for earlier, later in itertools.pairwise(pieces):
        # in time order and maximal: two pieces are always separated by a cut
        assert earlier.end is not None and earlier.end < later.start


@FAST
@given(pools.flatmap(lambda pool: st.lists(interval_in(pool), max_size=6)))
def test_first_overlap_finds_a_clash_iff_there_is_one(intervals: list[Interval]) -> None:
    clash = first_overlap(intervals)
    if pairwise_disjoint(intervals):
        assert clash is None
    else:
        assert clash is not None
        a, b = clash
        assert a.overlaps(b)
        assert a in intervals and b in intervals


# -- reconcile ---------------------------------------------------------------


@FAST
@given(scenarios())
def test_reconciled_timeline_never_overlaps(case: Case) -> None:
    _, existing, incoming = case
    timeline = new_timeline(existing, reconcile(existing, incoming))
    assert first_overlap([w.interval for w in timeline]) is None
    assert pairwise_disjoint([w.interval for w in timeline])


@FAST
@given(scenarios())
def test_reconciled_timeline_is_pointwise_right(case: Case) -> None:
    pool, existing, incoming = case
    result = reconcile(existing, incoming)
    kept = untouched(existing, result)
    for t in probes(pool):
        new = covering(incoming, t)
        installed = covering(list(result.installed), t)
        remnants = [r for r in result.remnants if r.interval.contains(t)]
        still = [w for w in kept if w.interval.contains(t)]
        old = [w for w in existing if w.interval.contains(t)]
        if new:
            # covered by incoming: exactly that incoming interval holds
            assert installed == new
            assert not remnants and not still
        elif old:
            # an existing window's point not covered by incoming keeps its window
            (window,) = old
            assert not installed
            if window.key in result.closed:
                assert [r.source for r in remnants] == [window.key] and not still
            else:
                assert still == [window] and not remnants
        else:
            # nothing appears where there was nothing
            assert not installed and not remnants and not still


@FAST
@given(scenarios())
def test_closed_are_exactly_the_windows_incoming_overlaps(case: Case) -> None:
    _, existing, incoming = case
    result = reconcile(existing, incoming)
    hit = {w.key for w in existing if any(w.interval.overlaps(i) for i in incoming)}
    assert len(result.closed) == len(set(result.closed))
    assert set(result.closed) == hit
    assert {w.key for w in untouched(existing, result)} == {w.key for w in existing} - hit
    sources = {w.key: w.interval for w in existing}
    for remnant in result.remnants:
        assert remnant.source in hit
        assert inside(remnant.interval, sources[remnant.source])
        assert not any(remnant.interval.overlaps(i) for i in incoming)


@FAST
@given(scenarios())
def test_output_order_is_deterministic(case: Case) -> None:
    _, existing, incoming = case
    result = reconcile(existing, incoming)
    assert sorted(result.installed, key=lambda i: i.start) == list(result.installed)
    assert sorted(incoming, key=lambda i: i.start) == list(result.installed)
    starts = [r.interval.start for r in result.remnants]
    assert starts == sorted(starts)
    assert reconcile(list(reversed(existing)), list(reversed(incoming))) == result


@FAST
@given(pools.flatmap(lambda pool: timeline_in(pool)))
def test_no_incoming_changes_nothing(intervals: list[Interval]) -> None:
    existing = [Window(f"w{i}", iv) for i, iv in enumerate(intervals)]
    assert reconcile(existing, []) == Reconciliation(closed=(), remnants=(), installed=())


@FAST
@given(scenarios())
def test_reinstalling_closes_only_the_installed_windows(case: Case) -> None:
    _, existing, incoming = case
    timeline = new_timeline(existing, reconcile(existing, incoming))
    again = reconcile(timeline, incoming)
    installed_keys = {w.key for w in timeline if w.key.startswith("installed")}
    assert set(again.closed) == installed_keys
    assert again.remnants == ()
    assert again.installed == tuple(sorted(incoming, key=lambda i: i.start))


@FAST
@given(
    scenarios(),
    st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=30)),
    st.none() | st.timedeltas(min_value=US, max_value=timedelta(days=30)),
    st.booleans(),
)
def test_overlapping_input_is_rejected(
    case: tuple[list[datetime], list[Window], list[Interval]],
    back: timedelta,
    forward: timedelta | None,
    corrupt_existing: bool,
) -> None:
    pool, existing, incoming = case
    victims = [w.interval for w in existing] if corrupt_existing else incoming
    target = victims[0] if victims else Interval(pool[0])
    # contains target.start, so it overlaps target
    clash = Interval(target.start - back, None if forward is None else target.start + forward)
    extra = [clash] if victims else [target, clash]
    with pytest.raises(InvalidIntervalError):
        if corrupt_existing:
            reconcile([*existing, *(Window(f"x{i}", iv) for i, iv in enumerate(extra))], incoming)
        else:
            reconcile(existing, [*incoming, *extra])


@FAST
@given(pools.flatmap(lambda pool: st.tuples(st.just(pool), timeline_in(pool))))
def test_at_returns_the_window_holding_the_moment(
    case: tuple[list[datetime], list[Interval]],
) -> None:
    pool, intervals = case
    windows = [Window(f"w{i}", iv) for i, iv in enumerate(intervals)]
    for t in probes(pool):
        holding = [w for w in windows if w.interval.contains(t)]
        assert at(windows, t) == (holding[0] if holding else None)


# -- examples ----------------------------------------------------------------


def day(month: int, dom: int) -> datetime:
    return datetime(2025, month, dom, tzinfo=UTC)


def test_story_daily_through_october_then_friday_again() -> None:
    friday = Window("friday", Interval(day(10, 2)))
    daily = Interval(day(10, 19), day(11, 1))
    friday_again = Interval(day(11, 1))
    result = reconcile([friday], [friday_again, daily])
    assert result == Reconciliation(
        closed=("friday",),
        remnants=(Remnant("friday", Interval(day(10, 2), day(10, 19))),),
        installed=(daily, friday_again),
    )
    timeline = new_timeline([friday], result)
    assert at(timeline, day(10, 18)) == Window("remnant0", Interval(day(10, 2), day(10, 19)))
    assert at(timeline, day(10, 19)) == Window("installed0", daily)
    assert at(timeline, day(11, 1)) == Window("installed1", friday_again)
    assert at(timeline, day(10, 1)) is None


def test_touching_window_is_left_alone() -> None:
    before = Window("before", Interval(day(10, 1), day(10, 19)))
    after = Window("after", Interval(day(11, 1)))
    result = reconcile([after, before], [Interval(day(10, 19), day(11, 1))])
    assert result.closed == ()
    assert result.remnants == ()


def test_cut_in_the_middle_leaves_two_remnants() -> None:
    month = Window("month", Interval(day(10, 1), day(11, 1)))
    result = reconcile([month], [Interval(day(10, 10), day(10, 20))])
    assert result.closed == ("month",)
    assert result.remnants == (
        Remnant("month", Interval(day(10, 1), day(10, 10))),
        Remnant("month", Interval(day(10, 20), day(11, 1))),
    )


def test_incoming_covering_several_windows_closes_them_all() -> None:
    a = Window("a", Interval(day(10, 1), day(10, 5)))
    b = Window("b", Interval(day(10, 5), day(10, 9)))
    c = Window("c", Interval(day(10, 20)))
    result = reconcile([c, b, a], [Interval(day(9, 1), day(10, 21))])
    assert result.closed == ("a", "b", "c")
    assert result.remnants == (Remnant("c", Interval(day(10, 21))),)
