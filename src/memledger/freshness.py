"""How fresh memory is: the figures behind the freshness contract (docs/freshness.md).

:func:`freshness` reads them from the canonical store, the index and the read
counters of one process (what :meth:`memledger.Memory.freshness` passes it):

* **extraction lag**: seconds from an event's job being queued to its accepted
  canonical update (the job done), over the jobs done in the last ``window``
  (median and 95th percentile), and the backlog: queued jobs and the age of the oldest;
* **index lag**: outbox rows the index has not applied (reads recheck every hit
  against the store, so a lagging index can miss a new memory, never return a stale one);
* **reads** (:class:`ReadStats`, since the process started): recalls, those that
  abstained (no memory in the answer), those that ran lexical only (no vectors),
  and the candidates the canonical recheck refused, by reason (``stale_index``:
  the index held an older revision; ``revoked``, ``superseded``, ``past_expiry`` ...);
* **erasure**: seconds from an erasure's request to its last store's status, over
  the erasures of the window.

Corrections and revocations have no lag to measure: they are visible to every read
once acknowledged (the read path rechecks the canonical store, and a revision token
makes a replica wait or hand over to the primary).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from memledger.ports import Clock, Store
    from memledger.read.recall import RecallResult

__all__ = ["Freshness", "ReadStats", "freshness"]

WINDOW = timedelta(hours=1)


@dataclass
class ReadStats:
    """Counters of one process's recalls (thread-safe)."""

    recalls: int = 0
    abstained: int = 0
    lexical_only: int = 0
    excluded: Counter[str] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def count(self, result: RecallResult) -> None:
        with self._lock:
            self.recalls += 1
            self.abstained += int(result.abstained)
            self.lexical_only += int(result.mode == "lexical")
            self.excluded.update(e.reason for e in result.excluded)

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {
                "recalls": self.recalls,
                "abstained": self.abstained,
                "lexical_only": self.lexical_only,
                "abstained_fraction": self.abstained / self.recalls if self.recalls else None,
                "excluded": dict(sorted(self.excluded.items())),
            }


@dataclass(frozen=True, slots=True, kw_only=True)
class Freshness:
    at: datetime
    tenant: str | None
    window_seconds: float
    queued_jobs: int
    oldest_queued_seconds: float | None
    extraction_lag_p50: float | None
    extraction_lag_p95: float | None
    jobs_done: int
    index_lag: int | None
    """``None``: this process has no index open."""
    erasure_p95: float | None
    erasures: int
    reads: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {
            "at": self.at.isoformat(),
            "tenant": self.tenant,
            "window_seconds": self.window_seconds,
            "extraction": {
                "queued_jobs": self.queued_jobs,
                "oldest_queued_seconds": self.oldest_queued_seconds,
                "jobs_done": self.jobs_done,
                "lag_p50_seconds": self.extraction_lag_p50,
                "lag_p95_seconds": self.extraction_lag_p95,
            },
            "index_lag_rows": self.index_lag,
            "erasure": {"erasures": self.erasures, "p95_seconds": self.erasure_p95},
            "reads": self.reads,
        }


class Lagging(Protocol):
    """What the figures need of a derived index: how far behind the outbox it is."""

    def lag(self, store: Store, *, tenant: str | None = None) -> int: ...


def quantile(values: Sequence[float], q: float) -> float | None:
    """The ``q`` quantile by the nearest rank (``None`` of nothing)."""
    if not values:
        return None
    ordered = sorted(values)
    # ceil(q * n) in whole percents: 0.95 * 20 is 19.000000000000004 in floats
    rank = max(1, min(len(ordered), -(-round(q * 100) * len(ordered) // 100)))
    return ordered[rank - 1]


def freshness(
    store: Store,
    clock: Clock,
    *,
    index: Lagging | None,
    reads: ReadStats,
    tenant: str | None = None,
    window: timedelta = WINDOW,
) -> Freshness:
    """The freshness figures now (see the module docstring), of ``tenant`` or of every
    tenant (erasures: of ``tenant`` only, as receipts are kept per tenant): from
    ``store``, the derived ``index`` a process has opened (``None``: no index lag to
    report) and the ``reads`` it counted."""
    now = clock.now()
    since = now - window
    with store.read() as unit:
        queued, oldest = unit.queue_state(tenant)
        lags = list(unit.job_lags(tenant, since=since))
        bodies = unit.erasure_bodies(tenant) if tenant is not None else ()
    took = []
    if bodies:
        from memledger.write.erase import receipts

        for receipt in receipts(bodies):
            if receipt.requested_at >= since and receipt.stores:
                last = max(s.at for s in receipt.stores)
                took.append((last - receipt.requested_at).total_seconds())
    lag = None if index is None else index.lag(store, tenant=tenant)
    return Freshness(
        at=now,
        tenant=tenant,
        window_seconds=window.total_seconds(),
        queued_jobs=queued,
        oldest_queued_seconds=None if oldest is None else (now - oldest).total_seconds(),
        extraction_lag_p50=quantile(lags, 0.5),
        extraction_lag_p95=quantile(lags, 0.95),
        jobs_done=len(lags),
        index_lag=lag,
        erasure_p95=quantile(took, 0.95),
        erasures=len(took),
        reads=reads.snapshot(),
    )
