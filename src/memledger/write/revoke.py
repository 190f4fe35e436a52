"""Revocation: close claims as revoked and bump the family's generation.

Once a :class:`RevocationReceipt` is returned, nothing brings the claims back:
work that began under the older generation is rejected at commit
(``stale_generation``), the revoked claims' source events are recorded so that
no replay or re-extraction of them writes into the family again
(``revoked_source``), and every read filters revoked records out. A *new*
authorised event may set a new value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from memledger.domain.records import HistoryEntry, MemoryRecord, RevocationReceipt
from memledger.errors import MemoryNotFoundError
from memledger.ports import FamilySlot, UnitOfWork
from memledger.write.commit import stable_id


def revoke_memory(
    unit: UnitOfWork, tenant: str, memory_id: str, *, reason: str, now: datetime
) -> RevocationReceipt:
    """Revoke a memory. The unit of revocation is what one source event said in one
    family: the record, its remnants, and the event's other claims in the family,
    so that no part of the claim outlives the revocation. Revoking it again is
    acknowledged without another change; revoking a family always bumps it."""
    record = unit.get_record(tenant, memory_id)
    if record is None:
        raise MemoryNotFoundError(f"no memory {memory_id!r} for tenant {tenant!r}")
    slot = unit.lock_family(tenant, record.subject, record.family)
    targets = [
        r
        for r in unit.family_records(tenant, record.subject, record.family, open_only=True)
        if r.source_event_id == record.source_event_id
    ]
    already = unit.is_revoked_source(tenant, record.subject, record.family, record.source_event_id)
    if already and not targets:  # a retried revocation: acknowledge it again, change nothing
        return RevocationReceipt(
            tenant=tenant,
            subject=record.subject,
            family=record.family,
            revision=slot.revision,
            generation=slot.generation,
            revoked=(),
            acknowledged_at=slot.updated_at or now,
            reason=reason,
        )
    return _revoke(unit, slot, targets, sources=[record.source_event_id], reason=reason, now=now)


def revoke_family(
    unit: UnitOfWork, tenant: str, subject: str, family: str, *, reason: str, now: datetime
) -> RevocationReceipt:
    """Revoke everything a family ever held: open records are closed as revoked, and
    every source that wrote into it is revoked, so no audit view shows it either."""
    slot = unit.lock_family(tenant, subject, family)
    everything = unit.family_records(tenant, subject, family, open_only=False)
    targets = [r for r in everything if r.superseded_at is None]
    sources = sorted({r.source_event_id for r in everything})
    return _revoke(unit, slot, targets, sources=sources, reason=reason, now=now)


def _revoke(
    unit: UnitOfWork,
    slot: FamilySlot,
    targets: Sequence[MemoryRecord],
    *,
    sources: Sequence[str],
    reason: str,
    now: datetime,
) -> RevocationReceipt:
    at = max(now, slot.updated_at) if slot.updated_at is not None else now
    revision, generation = slot.revision + 1, slot.generation + 1
    cause = stable_id("rvk", slot.tenant, slot.subject, slot.family, str(generation))
    for record in targets:
        unit.close_record(slot.tenant, record.memory_id, status="revoked", at=at, closed_by=cause)
        closed = replace(record, status="revoked", superseded_at=at, closed_by=cause)
        unit.add_history(
            HistoryEntry(
                seq=0,
                tenant=slot.tenant,
                subject=slot.subject,
                family=slot.family,
                revision=revision,
                generation=generation,
                action="revoked",
                memory_id=record.memory_id,
                status="revoked",
                at=at,
                cause=f"{cause}: {reason}",
            )
        )
        unit.add_outbox(
            replace(closed, revision=revision, generation=generation), op="delete", at=at
        )
    for event_id in sources:
        unit.add_revoked_source(
            slot.tenant, slot.subject, slot.family, event_id=event_id, generation=generation
        )
    unit.put_family(replace(slot, revision=revision, generation=generation, updated_at=at))
    return RevocationReceipt(
        tenant=slot.tenant,
        subject=slot.subject,
        family=slot.family,
        revision=revision,
        generation=generation,
        revoked=tuple(r.memory_id for r in targets),
        acknowledged_at=at,
        reason=reason,
    )
