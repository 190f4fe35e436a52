"""Per-tenant quotas: how much one tenant may hold and ask for, so that one tenant
cannot crowd out the others. Pure (the store keeps each tenant's, ``Memory`` checks).

* ``max_records``: open records the tenant may hold; an ingest when it holds that
  many is refused (records that expire, are erased or are closed make room);
* ``jobs_per_minute``: extraction jobs the tenant may queue in any minute (events
  sent without claims); past it, ingest is refused until the minute has passed;
* ``recalls_per_second``: recalls and context packets the tenant may ask of one
  process each second (a token bucket holding a second's worth);
* ``packet_tokens``: the largest budget a context packet of the tenant may ask for.

``None`` is no limit. A refusal raises :class:`~memledger.errors.QuotaExceededError`
naming the quota and when to retry (HTTP 429), and changes nothing. The worker already
takes the tenants' jobs a turn each, so a tenant within its quotas is not starved.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

from memledger.errors import InvalidInputError

__all__ = ["Quotas", "RateGate"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Quotas:
    max_records: int | None = None
    jobs_per_minute: int | None = None
    recalls_per_second: float | None = None
    packet_tokens: int | None = None

    def __post_init__(self) -> None:
        for name in ("max_records", "jobs_per_minute", "packet_tokens"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1
            ):
                raise InvalidInputError(
                    f"{name} must be a whole number >= 1 or None, got {value!r}"
                )
        rate = self.recalls_per_second
        if rate is not None and (
            isinstance(rate, bool)
            or not isinstance(rate, int | float)
            or not math.isfinite(rate)
            or rate <= 0
        ):
            raise InvalidInputError(f"recalls_per_second must be > 0 or None, got {rate!r}")

    @property
    def unlimited(self) -> bool:
        return all(v is None for v in asdict(self).values())

    def to_dict(self) -> dict[str, int | float | None]:
        """Every quota by name (``None``: no limit)."""
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Quotas:
        return cls(**json.loads(text))


class RateGate:
    """Token buckets per key, each holding a second's worth of tokens (at least one)
    and refilled at ``rate`` a second. Thread-safe."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._now = clock
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, key: str, rate: float) -> float:
        """Take a token; 0.0 when one was there, else the seconds until one is."""
        with self._lock:
            now = self._now()
            full = max(1.0, rate)
            tokens, then = self._buckets.get(key, (full, now))
            tokens = min(full, tokens + (now - then) * rate)
            if tokens >= 1.0:
                self._buckets[key] = (tokens - 1.0, now)
                return 0.0
            self._buckets[key] = (tokens, now)
            return (1.0 - tokens) / rate
