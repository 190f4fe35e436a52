"""The valid-time algebra: half-open intervals and the reconciliation of a timeline.

An interval is ``[start, end)``; ``end=None`` is open-ended. For one
(tenant, subject, family, scope) the active windows never overlap. An event
installs one or more intervals; every active window that overlaps one of them
is closed in record time, and the parts of it that no new interval covers are
reinstated as remnants. Nothing is edited in place, so record time keeps every
belief readable.

Pure: no I/O, no clock. Property tests in ``tests/test_intervals.py``.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from memledger.errors import InvalidIntervalError


@dataclass(frozen=True, slots=True)
class Interval:
    """A half-open valid-time interval ``[start, end)``; ``end=None`` never ends."""

    start: datetime
    end: datetime | None = None

    def __post_init__(self) -> None:
        if not _aware(self.start) or (self.end is not None and not _aware(self.end)):
            raise InvalidIntervalError("interval bounds must be timezone-aware")
        if self.end is not None and self.end <= self.start:
            raise InvalidIntervalError(
                f"interval end {self.end.isoformat()!r} is not after "
                f"start {self.start.isoformat()!r}"
            )

    def contains(self, at: datetime) -> bool:
        return self.start <= at and (self.end is None or at < self.end)

    def overlaps(self, other: Interval) -> bool:
        return _before(self.start, other.end) and _before(other.start, self.end)

    def intersection(self, other: Interval) -> Interval | None:
        start = max(self.start, other.start)
        end = _min_end(self.end, other.end)
        if end is not None and end <= start:
            return None
        return Interval(start, end)

    def minus(self, other: Interval) -> tuple[Interval, ...]:
        """The parts of ``self`` that ``other`` does not cover: zero, one or two pieces."""
        if not self.overlaps(other):
            return (self,)
        pieces: list[Interval] = []
        if self.start < other.start:
            pieces.append(Interval(self.start, other.start))
        if other.end is not None and (self.end is None or other.end < self.end):
            pieces.append(Interval(other.end, self.end))
        return tuple(pieces)


def _aware(moment: datetime) -> bool:
    """Aware as Python defines it: a tzinfo that gives an offset (else comparisons fail)."""
    return moment.tzinfo is not None and moment.utcoffset() is not None


def _before(start: datetime, end: datetime | None) -> bool:
    """``start < end`` with ``None`` as +infinity."""
    return end is None or start < end


def _min_end(a: datetime | None, b: datetime | None) -> datetime | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


def subtract(interval: Interval, cuts: Iterable[Interval]) -> tuple[Interval, ...]:
    """The parts of ``interval`` that none of ``cuts`` cover, in time order."""
    pieces = [interval]
    for cut in cuts:
        pieces = [piece for p in pieces for piece in p.minus(cut)]
    return tuple(sorted(pieces, key=lambda p: p.start))


def first_overlap(intervals: Sequence[Interval]) -> tuple[Interval, Interval] | None:
    """A pair of overlapping intervals, or ``None`` when they are pairwise disjoint."""
    ordered = sorted(intervals, key=lambda i: i.start)
    for earlier, later in itertools.pairwise(ordered):
        if earlier.overlaps(later):
            return earlier, later
    return None


@dataclass(frozen=True, slots=True)
class Window:
    """An active window of a timeline: a record's key and its valid interval."""

    key: str
    interval: Interval


@dataclass(frozen=True, slots=True)
class Remnant:
    """A part of a closed window that stays true: reinstated as a new record."""

    source: str
    interval: Interval


@dataclass(frozen=True, slots=True)
class Reconciliation:
    """What one event does to a timeline.

    ``closed`` windows end in record time; ``remnants`` are the parts of them
    that no installed interval covers; ``installed`` are the event's intervals.
    The new timeline is the untouched windows, the remnants and the installed
    intervals, and they never overlap.
    """

    closed: tuple[str, ...]
    remnants: tuple[Remnant, ...]
    installed: tuple[Interval, ...]


def reconcile(existing: Sequence[Window], incoming: Sequence[Interval]) -> Reconciliation:
    """Install ``incoming`` intervals into a timeline of non-overlapping ``existing`` windows.

    Raises :class:`InvalidIntervalError` if the incoming intervals overlap each
    other (one event contradicting itself) or the existing windows overlap
    (a corrupted timeline: never repaired silently).
    """
    clash = first_overlap([w.interval for w in existing])
    if clash is not None:
        raise InvalidIntervalError(f"existing timeline overlaps itself: {clash[0]} and {clash[1]}")
    clash = first_overlap(incoming)
    if clash is not None:
        raise InvalidIntervalError(
            f"one event installs overlapping intervals: {clash[0]} and {clash[1]}"
        )
    closed: list[str] = []
    remnants: list[Remnant] = []
    for window in sorted(existing, key=lambda w: w.interval.start):
        if not any(window.interval.overlaps(i) for i in incoming):
            continue
        closed.append(window.key)
        remnants.extend(Remnant(window.key, piece) for piece in subtract(window.interval, incoming))
    return Reconciliation(
        closed=tuple(closed),
        remnants=tuple(remnants),
        installed=tuple(sorted(incoming, key=lambda i: i.start)),
    )


def at(windows: Iterable[Window], moment: datetime) -> Window | None:
    """The window of a non-overlapping timeline that holds at ``moment``, if any."""
    for window in windows:
        if window.interval.contains(moment):
            return window
    return None
