"""Erasure: deleting what memory holds, not only ceasing to use it (seed 000: deletion
has at least two clocks; DESIGN.md invariant 7).

Revocation (:mod:`memledger.write.revoke`) stops use at once. Erasure removes the data,
as a tracked process with a receipt:

1. **What it covers.** An event; a memory (the event its words came from: erasing a
   record erases the event that said it, and everything else derived from that
   event); or a subject (every event of the subject, and every event that wrote a
   record about it: such an event's text is about the subject).
2. **The ledger, in one transaction.** Each event is first forgotten (every record
   derived from it revoked, its families' generations bumped, so a late job, a
   cached value or a stale index entry cannot bring it back), then deleted with
   every record derived from it, their outcomes, mentions, queued jobs and review
   items. History keeps that each record existed and was erased (an ``erased``
   entry, ids only), not what it said; an erased subject's traces keep their memory
   ids and lose their requests and other text (other traces name records by id
   only: a trace stores no memory's words). A tombstone per event (ids and
   content hash, no content) refuses a replay of it
   (:class:`~memledger.errors.EventErasedError`). The store then overwrites or
   vacuums what the deleted rows left (:meth:`~memledger.ports.Store.scrub`).
3. **Derived stores, after the commit.** The index applies the deletions and purges
   what they leave in its files; the hot cache drops the subjects' values.
   Each store's status and time go on the receipt; a step that fails is marked
   ``failed`` with its error, and erasing the same target again finishes it (every
   step is idempotent).

The receipt is stored (:meth:`memledger.memory.Memory.erasures` lists them).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal

from memledger.domain.records import format_time
from memledger.errors import EventNotFoundError, MemledgerError, MemoryNotFoundError
from memledger.ports import UnitOfWork
from memledger.write.batch import stable_id
from memledger.write.revoke import forget_event

ErasureScope = Literal["event", "memory", "subject", "expiry"]
StoreStatus = Literal["erased", "nothing_held", "failed", "not_configured"]


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreErasure:
    """One store's part of an erasure."""

    store: str
    """``ledger`` (events, records, outcomes, mentions, jobs, reviews, history text),
    ``traces``, ``index`` or ``hot_cache``."""
    status: StoreStatus
    at: datetime
    detail: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ErasureReceipt:
    """What an erasure covered, by id only, and each store's status."""

    erasure_id: str
    tenant: str
    scope: ErasureScope
    target: str
    reason: str
    requested_at: datetime
    events: tuple[str, ...]
    memory_ids: tuple[str, ...]
    subjects: tuple[str, ...]
    stores: tuple[StoreErasure, ...] = field(default=())

    @property
    def complete(self) -> bool:
        """Whether every store finished (nothing ``failed``)."""
        return all(s.status != "failed" for s in self.stores)

    def store(self, name: str) -> StoreErasure:
        for entry in self.stores:
            if entry.store == name:
                return entry
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "erasure_id": self.erasure_id,
            "tenant": self.tenant,
            "scope": self.scope,
            "target": self.target,
            "reason": self.reason,
            "requested_at": _iso(self.requested_at),
            "events": list(self.events),
            "memory_ids": list(self.memory_ids),
            "subjects": list(self.subjects),
            "complete": self.complete,
            "stores": [
                {"store": s.store, "status": s.status, "at": _iso(s.at), "detail": s.detail}
                for s in self.stores
            ],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ErasureReceipt:
        return cls(
            erasure_id=data["erasure_id"],
            tenant=data["tenant"],
            scope=data["scope"],
            target=data["target"],
            reason=data["reason"],
            requested_at=datetime.fromisoformat(data["requested_at"]),
            events=tuple(data["events"]),
            memory_ids=tuple(data["memory_ids"]),
            subjects=tuple(data["subjects"]),
            stores=tuple(
                StoreErasure(
                    store=s["store"],
                    status=s["status"],
                    at=datetime.fromisoformat(s["at"]),
                    detail=s["detail"],
                )
                for s in data["stores"]
            ),
        )


def _iso(value: datetime) -> str:
    """As the wire writes times (:func:`memledger.wire.isoformat`)."""
    return value.astimezone(UTC).isoformat().removesuffix("+00:00") + "Z"


def covered_events(unit: UnitOfWork, tenant: str, scope: ErasureScope, target: str) -> list[str]:
    """The events an erasure of ``target`` covers (see the module docstring). An event or
    memory that is not there, and was not erased before, is an error."""
    if scope == "subject":
        return list(unit.erasable_events(tenant, target))
    if scope == "event":
        if unit.get_event(tenant, target) is not None:
            return [target]
        if unit.tombstone(tenant, target) is not None:
            return []  # erased before: this run finishes what may be left
        raise EventNotFoundError(f"no event {target!r} for tenant {tenant!r}")
    record = unit.get_record(tenant, target)
    if record is None:
        raise MemoryNotFoundError(f"no memory {target!r} for tenant {tenant!r}")
    return [record.source_event_id]


def erase_in_ledger(
    unit: UnitOfWork,
    tenant: str,
    scope: ErasureScope,
    target: str,
    *,
    reason: str,
    now: datetime,
) -> ErasureReceipt:
    """Step 2 of the module docstring, inside ``unit``: the receipt with the ledger's and
    the traces' status (stored with it)."""
    events = covered_events(unit, tenant, scope, target)
    erasure_id = stable_id("erasure", tenant, scope, target, format_time(now))
    memory_ids: set[str] = set()
    subjects: set[str] = {target} if scope == "subject" else set()
    for event_id in events:
        stored = unit.get_event(tenant, event_id)
        if stored is None:
            continue
        subjects.add(stored.event.subject)
        derived = unit.event_records(tenant, event_id, open_only=False)
        memory_ids.update(r.memory_id for r in derived)
        subjects.update(r.subject for r in derived)
        forget_event(unit, tenant, event_id, reason=f"erased: {reason}", now=now)
    counts = unit.erase_events(tenant, events, erasure_id=erasure_id, at=now)
    held = sum(counts.values())
    ledger = StoreErasure(
        store="ledger",
        status="erased" if held else "nothing_held",
        at=now,
        detail=", ".join(f"{n} {kind}" for kind, n in counts.items()),
    )
    # a subject's traces are about it; other traces hold the erased records by id only
    scrubbed = unit.scrub_traces(tenant, target, erasure_id=erasure_id) if scope == "subject" else 0
    traces = StoreErasure(
        store="traces",
        status="erased" if scrubbed else "nothing_held",
        at=now,
        detail=f"{scrubbed} traces of the subject lost their text; memory ids stay",
    )
    receipt = ErasureReceipt(
        erasure_id=erasure_id,
        tenant=tenant,
        scope=scope,
        target=target,
        reason=reason,
        requested_at=now,
        events=tuple(events),
        memory_ids=tuple(sorted(memory_ids)),
        subjects=tuple(sorted(subjects)),
        stores=(ledger, traces),
    )
    save(unit, receipt)
    return receipt


def expire_in_ledger(
    unit: UnitOfWork, tenant: str, *, now: datetime, limit: int
) -> ErasureReceipt | None:
    """Erase up to ``limit`` of the tenant's records whose expiry has come, and each
    event no record is derived from any more (with its tombstone), inside ``unit``;
    ``None`` when none has expired. An event that still gives a record (a fact kept
    longer than its turn's episode) stays."""
    expired = unit.expired_records(tenant, now=now, limit=limit)
    if not expired:
        return None
    erasure_id = stable_id("erasure", tenant, "expiry", format_time(now), expired[0].memory_id)
    ids = [r.memory_id for r in expired]
    counts = dict(  # a session summary outlives its episodes, under its own expiry
        unit.erase_records(tenant, ids, erasure_id=erasure_id, at=now, keep_summaries=True)
    )
    sources = sorted({r.source_event_id for r in expired})
    live = set(unit.live_event_records(tenant, sources))
    gone = [e for e in sources if e not in live]
    for kind, n in unit.erase_events(tenant, gone, erasure_id=erasure_id, at=now).items():
        counts[kind] = counts.get(kind, 0) + n
    receipt = ErasureReceipt(
        erasure_id=erasure_id,
        tenant=tenant,
        scope="expiry",
        target=format_time(now),
        reason="expired",
        requested_at=now,
        events=tuple(gone),
        memory_ids=tuple(sorted(ids)),
        subjects=tuple(sorted({r.subject for r in expired})),
        stores=(
            StoreErasure(
                store="ledger",
                status="erased",
                at=now,
                detail=", ".join(f"{n} {kind}" for kind, n in counts.items()),
            ),
        ),
    )
    save(unit, receipt)
    return receipt


def save(unit: UnitOfWork, receipt: ErasureReceipt) -> None:
    unit.put_erasure(
        receipt.tenant,
        receipt.erasure_id,
        at=receipt.requested_at,
        body=json.dumps(receipt.to_dict(), sort_keys=True),
    )


def run_step(
    receipt: ErasureReceipt,
    name: str,
    step: Callable[[], StoreStatus],
    *,
    clock: Callable[[], datetime],
) -> ErasureReceipt:
    """Run one derived store's step; its status (``failed`` with the error when it
    raises one of the library's errors) goes on the receipt."""
    try:
        status: StoreStatus = step()
        detail = ""
    except MemledgerError as exc:  # the ledger is erased: the receipt must still be kept
        status, detail = "failed", str(exc)
    entry = StoreErasure(store=name, status=status, at=clock(), detail=detail)
    return replace(receipt, stores=(*receipt.stores, entry))


def receipts(bodies: Sequence[tuple[str, str]]) -> tuple[ErasureReceipt, ...]:
    return tuple(ErasureReceipt.from_dict(json.loads(body)) for _, body in bodies)
