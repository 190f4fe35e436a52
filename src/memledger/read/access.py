"""Which memories reads handed out, and when: the clock of decay.

Recall ranks by the time since a memory was last *touched*
(:func:`memledger.domain.scoring.down_weight`; volatile kinds also lose
confidence, :func:`~memledger.domain.scoring.decayed_confidence`). A memory is
touched when it is stated (its valid-time start), when another event states it
again (a mention, at that event's occurrence) and when a read hands it out (an
*access*): the items of a recall, and the memories a context packet places.
A memory that matters keeps being read, so it keeps its weight; one nobody
reads for months sinks toward the floor, and the next read lifts it back.

Accesses are noted in memory and written in batches (:meth:`AccessLog.due`:
``batch`` memories or ``every`` seconds after the first unwritten one, and when
the :class:`~memledger.memory.Memory` closes), one small write transaction per
batch, off the read's own snapshot. They are ids and times, never content, and
an erasure deletes them with the records. Until a batch is written only this
process's reads see it (:meth:`AccessLog.pending`); a batch that cannot be
written (the store is locked or down) stays pending for the next try, up to
``limit`` memories, past which the oldest notes are dropped and counted in
:attr:`AccessLog.dropped`: an access is a ranking hint, not a record anyone
relies on, and a read never fails for it.

A read as of a past valid time (``valid_at``) counts only touches at or before
it; because a memory keeps only its *last* access, a memory read again after
that time loses its earlier accesses to such a read (its mentions stay exact).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING

from memledger.errors import StoreError

if TYPE_CHECKING:
    from memledger.ports import Store

log = logging.getLogger(__name__)

FLUSH_BATCH = 256
"""Write the pending accesses once this many memories are pending..."""
FLUSH_EVERY = 5.0
"""...or this many seconds after the oldest pending one was noted."""
PENDING_LIMIT = 50_000
"""The most memories held pending while the store cannot be written."""


class AccessLog:
    """This process's accesses that are not written yet (thread-safe)."""

    def __init__(
        self,
        *,
        batch: int = FLUSH_BATCH,
        every: float = FLUSH_EVERY,
        limit: int = PENDING_LIMIT,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.batch, self.every, self.limit = batch, every, limit
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._pending: dict[tuple[str, str], tuple[datetime, int]] = {}
        self._since: float | None = None
        self.written = 0
        """Memories whose accesses this log wrote."""
        self.dropped = 0
        """Memories whose accesses were dropped because the store could not take them."""

    def note(self, tenant: str, memory_ids: Iterable[str], *, at: datetime) -> None:
        """``memory_ids`` of ``tenant`` were handed out at record time ``at``."""
        with self._lock:
            for memory_id in dict.fromkeys(memory_ids):
                key = (tenant, memory_id)
                last, count = self._pending.get(key, (at, 0))
                self._pending[key] = (max(last, at), count + 1)
            if self._pending and self._since is None:
                self._since = self._monotonic()
            self._trim()

    def due(self) -> bool:
        with self._lock:
            return bool(self._pending) and (
                len(self._pending) >= self.batch
                or (self._since is not None and self._monotonic() - self._since >= self.every)
            )

    def pending(
        self, tenant: str, memory_ids: Iterable[str], *, before: datetime
    ) -> dict[str, datetime]:
        """The unwritten last accesses of ``memory_ids`` at or before ``before``."""
        with self._lock:
            found = {m: self._pending.get((tenant, m)) for m in memory_ids}
        return {m: held[0] for m, held in found.items() if held is not None and held[0] <= before}

    def flush(self, store: Store) -> int:
        """Write what is pending, one transaction per tenant; returns the memories
        written. A store error leaves the unwritten rest pending and is raised."""
        with self._lock:
            taken, self._pending, self._since = self._pending, {}, None
        by_tenant: dict[str, dict[str, tuple[datetime, int]]] = {}
        for (tenant, memory_id), held in taken.items():
            by_tenant.setdefault(tenant, {})[memory_id] = held
        written = 0
        for tenant in sorted(by_tenant):
            try:
                with store.write() as unit:
                    unit.record_accesses(tenant, by_tenant[tenant])
            except BaseException:
                self._put_back({k: v for k, v in taken.items() if k[0] >= tenant})
                raise
            written += len(by_tenant[tenant])
        self.written += written
        return written

    def _put_back(self, unwritten: Mapping[tuple[str, str], tuple[datetime, int]]) -> None:
        with self._lock:
            for key, (last, count) in unwritten.items():
                held_last, held_count = self._pending.get(key, (last, 0))
                self._pending[key] = (max(held_last, last), held_count + count)
            if self._pending and self._since is None:
                self._since = self._monotonic()
            self._trim()

    def _trim(self) -> None:
        """Past ``limit``, drop the oldest notes (called with the lock held)."""
        over = len(self._pending) - self.limit
        if over > 0:
            oldest = sorted(self._pending, key=lambda key: self._pending[key][0])[:over]
            for key in oldest:
                del self._pending[key]
            self.dropped += over


def flush_quietly(accesses: AccessLog, store: Store, *, due_only: bool) -> None:
    """Write pending accesses (when due, with ``due_only``), logging a store error
    instead of raising it: a read never fails for its access notes."""
    if due_only and not accesses.due():
        return
    try:
        accesses.flush(store)
    except StoreError as error:
        log.warning("access notes kept pending: %s", error)
