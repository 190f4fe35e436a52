"""Deterministic helpers for tests of memledger and of code built on it.

``FrozenClock`` gives record time on demand; ``memledger.testing.conformance``
holds the suite every store backend must pass (needs the ``testing`` extra).
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

from memledger.domain.records import require_aware
from memledger.errors import InvalidInputError

__all__ = ["FrozenClock"]


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
