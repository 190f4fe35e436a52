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

:func:`erase` runs an erasure from start to end, :func:`expire` the erasures of what
expired, :func:`finish` the derived stores' steps; :func:`erase_in_ledger` and
:func:`expire_in_ledger` are their ledger parts, inside a transaction.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal

from memledger.domain.addresses import check_tenant
from memledger.domain.limits import check_reason
from memledger.domain.records import KINDS, format_time, require_id
from memledger.errors import (
    EventNotFoundError,
    InvalidInputError,
    InvalidQueryError,
    MemledgerError,
    MemoryNotFoundError,
)
from memledger.ports import UnitOfWork
from memledger.write.batch import stable_id
from memledger.write.ports import WritePorts
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


def erase(
    ports: WritePorts,
    *,
    tenant: str,
    event: str | None = None,
    memory_id: str | None = None,
    subject: str | None = None,
    reason: str = "erased",
) -> ErasureReceipt:
    """Delete what memory holds of one ``event``, one memory (``memory_id``: the
    event its words came from) or one ``subject``, in every store this project
    writes, and return the receipt: what it covered, by id, and each store's status
    and time (:mod:`memledger.write.erase`). Its use stops first, as with
    :meth:`forget`; a replay of an erased event is refused
    (:class:`~memledger.errors.EventErasedError`). Erasing the same target again
    finishes whatever a failed store left. Bad input changes nothing."""
    check_tenant(tenant)
    given: list[tuple[ErasureScope, str | None]] = [
        ("event", event),
        ("memory", memory_id),
        ("subject", subject),
    ]
    chosen = [(scope, target) for scope, target in given if target is not None]
    if len(chosen) != 1:
        raise InvalidInputError("erase one thing: give exactly one of event, memory_id, subject")
    scope, target = chosen[0]
    require_id(target, {"memory": "memory_id"}.get(scope, scope), InvalidQueryError)
    check_reason(reason, ports.limits)
    with ports.store.write() as unit:
        receipt = erase_in_ledger(unit, tenant, scope, target, reason=reason, now=ports.clock.now())
    return finish(ports, receipt)


def expire(
    ports: WritePorts, *, tenant: str | None = None, batch: int = 1000
) -> tuple[ErasureReceipt, ...]:
    """Erase every record whose expiry has come (its TTL, or the tenant's retention of
    its kind; such records already left every read), with the events no record is
    derived from any more, as erasures (:meth:`erase`); of one tenant, or of every
    tenant holding one. ``batch`` records per transaction. The worker runs this on
    a schedule (``memledger worker --expire-every``)."""
    if tenant is not None:
        check_tenant(tenant)
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise InvalidInputError(f"batch must be a positive whole number, got {batch!r}")
    now = ports.clock.now()
    if tenant is None:
        with ports.store.read() as unit:
            tenants = list(unit.expiring_tenants(now=now))
    else:
        tenants = [tenant]
    done: list[ErasureReceipt] = []
    for each in tenants:
        while True:
            with ports.store.write() as unit:
                receipt = expire_in_ledger(unit, each, now=now, limit=batch)
            if receipt is None:
                break
            done.append(finish(ports, receipt))
    return tuple(done)


def set_retention(ports: WritePorts, kind: str, days: int | None, *, tenant: str) -> int:
    """Keep the tenant's records of ``kind`` (episode, fact, preference, ...) ``days``
    days from when each was written (``None``: no retention). Records already held
    get the earlier of their own expiry and that day, at once; returns how many
    changed. A longer retention does not extend expiries already set."""
    check_tenant(tenant)
    if kind not in KINDS:
        raise InvalidInputError(f"unknown kind {kind!r}; expected one of {sorted(KINDS)}")
    if days is not None and (isinstance(days, bool) or not isinstance(days, int) or days < 1):
        raise InvalidInputError(f"days must be a whole number >= 1 or None, got {days!r}")
    with ports.store.write() as unit:
        return unit.set_retention(tenant, kind, days, at=ports.clock.now())


def finish(ports: WritePorts, receipt: ErasureReceipt) -> ErasureReceipt:
    """Step 3 of the module docstring for an erasure whose ledger part committed: the
    store's files scrubbed, the index purged, the hot cache dropped, each step's
    status on the receipt, stored again."""
    tenant = receipt.tenant

    def scrub() -> StoreStatus:
        ports.store.scrub()
        return "erased"

    def purge() -> StoreStatus:
        return "nothing_held" if ports.purge_index is None else ports.purge_index(tenant)

    def drop_cached() -> StoreStatus:
        if ports.invalidate is not None:
            for erased in receipt.subjects:
                ports.invalidate(tenant, erased)
        return "erased"

    for name, step in (("ledger_files", scrub), ("index", purge), ("hot_cache", drop_cached)):
        receipt = run_step(receipt, name, step, clock=ports.clock.now)
    with ports.store.write() as unit:
        save(unit, receipt)
    return receipt


def erasures(ports: WritePorts, *, tenant: str) -> tuple[ErasureReceipt, ...]:
    """The tenant's erasure receipts, oldest first."""
    check_tenant(tenant)
    with ports.store.read() as unit:
        return receipts(unit.erasure_bodies(tenant))
