"""Deterministic helpers for tests of memledger and of code built on it.

``FrozenClock`` gives record time on demand; ``memledger.testing.conformance``
holds the suite every store backend must pass (needs the ``testing`` extra).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

from memledger.domain.records import Claim, ExtractorInfo, SourceEvent, require_aware
from memledger.errors import InvalidInputError
from memledger.ports import Extraction

__all__ = ["FrozenClock", "FunctionExtractor"]


class FunctionExtractor:
    """An extractor made of a function: deterministic, for tests and simple pipelines.

    The function gets the event and returns claims, or an :class:`Extraction`
    (to say ``complete=False``); it may raise ``ExtractionError`` to simulate a
    failing endpoint. ``calls`` counts invocations.
    """

    def __init__(
        self,
        function: Callable[[SourceEvent], Sequence[Claim] | Extraction],
        *,
        name: str = "function",
        version: str = "1",
    ) -> None:
        self._function = function
        self._info = ExtractorInfo(kind="caller", name=name, version=version)
        self._lock = threading.Lock()
        self.calls = 0

    @property
    def info(self) -> ExtractorInfo:
        return self._info

    def extract(self, event: SourceEvent) -> Extraction:
        with self._lock:
            self.calls += 1
        result = self._function(event)
        if isinstance(result, Extraction):
            return result
        return Extraction(claims=tuple(result))


class FrozenClock:
    """A clock that only moves when told to. Thread-safe."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = require_aware(
            start or datetime(2026, 1, 1, tzinfo=UTC), "start", InvalidInputError
        )
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def set(self, moment: datetime) -> None:
        with self._lock:
            self._now = require_aware(moment, "moment", InvalidInputError)

    def advance(self, delta: timedelta = timedelta(seconds=1)) -> datetime:
        with self._lock:
            self._now += delta
            return self._now
