"""How much of the derived index's backlog a read applies, and the indexer step that
keeps the index caught up outside reads.

The index tails the canonical store's outbox and may lag. Keeping it caught up is
the background worker's work (:meth:`memledger.write.worker.Worker.run` applies up
to :attr:`~memledger.write.worker.WorkerSettings.index_rows` rows of every tenant
per round, in batches of :data:`FEED_BATCH`). A read applies at most a bounded part
of its own tenant's backlog (:class:`CatchUp`: :data:`READ_SECONDS` of work and
:data:`READ_ROWS` rows by default) and then answers from the index as it is. That
is safe because the read path never trusts the index: every hit is rechecked
against the canonical store (a superseded, revoked, erased or expired record is
dropped) and the current values of the families a query names come from their
canonical slots, revision floor included. What a read could not apply is reported
as its ``index_lag`` (outbox rows of the tenant the index has not applied). A read
leaves the tidying of what it wrote (the SQLite index's FTS5 segments,
:mod:`memledger.index._sqlite_merge`) to the indexer's next sync.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from memledger.errors import InvalidInputError

if TYPE_CHECKING:
    from memledger.ports import Store, UnitOfWork

__all__ = [
    "FEED_BATCH",
    "READ_BATCH",
    "READ_ROWS",
    "READ_SECONDS",
    "CatchUp",
    "Syncs",
    "catch_up",
    "feed",
    "pending",
]

READ_SECONDS = 0.1
"""Seconds of index work a read may spend on its tenant's backlog."""
READ_ROWS = 1000
"""Outbox rows a read applies at most."""
READ_BATCH = 50
"""Rows a read applies per step; the time budget is checked before each step."""
FEED_BATCH = 100
"""Rows the indexer applies per transaction (a read waits for at most one of them)."""


class Syncs(Protocol):
    """What catching up needs of an index (either backend): applying outbox rows."""

    def sync(
        self,
        store: Store,
        *,
        tenant: str | None = None,
        batch: int = 500,
        limit: int | None = None,
        deadline: float | None = None,
        merge: bool = True,
    ) -> int: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class CatchUp:
    """How much of its tenant's index backlog a read applies before it answers.

    Steps of ``batch`` rows are applied, the first always, the next while fewer than
    ``seconds`` have passed, until ``rows`` rows are applied; the step under way when
    the time is up finishes, so one read's work is bounded by ``seconds`` plus one
    step. ``rows=0`` or ``seconds=0`` leaves the index entirely to the indexer.
    """

    seconds: float = READ_SECONDS
    rows: int = READ_ROWS
    batch: int = READ_BATCH

    def __post_init__(self) -> None:
        seconds = self.seconds
        if isinstance(seconds, bool) or not isinstance(seconds, int | float):
            raise InvalidInputError(f"seconds must be a number, got {seconds!r}")
        if not 0 <= seconds < float("inf"):
            raise InvalidInputError(f"seconds must be >= 0 and finite, got {seconds!r}")
        for name, value, least in (("rows", self.rows, 0), ("batch", self.batch, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise InvalidInputError(f"{name} must be an integer >= {least}, got {value!r}")

    @property
    def applies(self) -> bool:
        """Whether a read applies anything at all."""
        return self.rows > 0 and self.seconds > 0


def catch_up(index: Syncs, store: Store, *, tenant: str, bound: CatchUp) -> int:
    """Apply at most ``bound``'s share of ``tenant``'s backlog; returns the rows applied."""
    if not bound.applies:
        return 0
    return index.sync(
        store,
        tenant=tenant,
        batch=min(bound.batch, bound.rows),
        limit=bound.rows,
        deadline=time.monotonic() + bound.seconds,
        merge=False,  # the indexer's work: a read never waits on a merge
    )


def feed(index: Syncs, store: Store, *, rows: int, tenant: str | None = None) -> int:
    """One step of the indexer: up to ``rows`` rows of every tenant's backlog (or of
    ``tenant``'s), oldest first, in transactions of :data:`FEED_BATCH`; returns the rows
    applied."""
    if rows <= 0:
        return 0
    return index.sync(store, tenant=tenant, batch=min(FEED_BATCH, rows), limit=rows)


def pending(unit: UnitOfWork, *, cursor: int, ahead: Mapping[str, int]) -> int:
    """Outbox rows an index has not applied, of every tenant: those past the global
    ``cursor`` less those each tenant's own sync applied (``ahead``: a tenant's
    cursor, where its syncs moved it past the global one)."""
    total = unit.outbox_count(after=cursor)
    for tenant, seq in ahead.items():
        if seq > cursor:
            total -= unit.outbox_pending(tenant, after=cursor) - unit.outbox_pending(
                tenant, after=seq
            )
    return max(0, total)
