"""Revocation and forgetting: stop using what a source event said, everywhere it went.

The rule (DESIGN.md, invariant 7). Revoking a memory revokes what its source
event said in its family: the record, its remnants and the event's other
claims in the family. The words it took away (its grounding quote and its
value, :mod:`memledger.domain.redact`) are then taken out of every other record
derived from the same event:

* a claim of another family (or subject) that states them is revoked too, in
  its own family, and its own words join the set (repeated until nothing more
  is found);
* the turn's episode is re-issued without them (each occurrence becomes
  ``[redacted]``), the original closed as revoked: the rest of the turn stays
  recallable;
* claims that do not state them (other facts of the event) stay usable.

The events that stated the same claim again (its NOOP mentions, merged into the
revoked record) said the same words: they are revoked sources of the family as
well, and their records are cleaned the same way.

Revoking a turn's episode is forgetting the turn: :func:`forget_event` revokes
everything derived from the event, in every family and subject, and records
the event as forgotten, so that no job, replay or later extraction writes
anything from it again.

Once a receipt is returned, nothing brings the claims back: work that began
before the revocation is rejected at commit (``stale_generation``; a job notes
the tenant's revocation count when it is queued, so this holds for claims about
any subject), the revoked sources are recorded (``revoked_source``), and every
read leaves revoked records out, audit views (``as_of``, ``history``) included
unless they ask for them. A *new* authorised event may set a new value.
Deleting the source event's text from the ledger is erasure, not revocation.

**Only what the caller may change.** Each function takes ``may_change``, a subject ->
bool test (:meth:`memledger.domain.keys.Principal.may_write_to`; ``None``: every
subject). A record about a subject the caller may not change (another agent's private
namespace) is left as it is, its words stay in it, and the receipt does not name it;
an event that wrote such a record is not recorded as forgotten either (that would stop
writes into the other namespace), while the families the caller revoked keep the event
as a revoked source, so nothing from it comes back into them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import datetime

from memledger.domain.changes import ChangeLog, ChangePart
from memledger.domain.records import (
    ForgetReceipt,
    HistoryAction,
    HistoryEntry,
    MemoryRecord,
    RevocationReceipt,
)
from memledger.domain.redact import redact, revoked_words, states
from memledger.errors import EventNotFoundError, MemoryNotFoundError
from memledger.ports import FamilySlot, UnitOfWork
from memledger.write.commit import stable_id
from memledger.write.history import family_time, history_entry
from memledger.write.undo import revocation_cause

MayChange = Callable[[str], bool] | None
"""Whether the caller may change records about a subject (``None``: every subject)."""


def _may(may_change: MayChange, subject: str) -> bool:
    return may_change is None or may_change(subject)


def revoke_memory(
    unit: UnitOfWork,
    tenant: str,
    memory_id: str,
    *,
    reason: str,
    now: datetime,
    log: ChangeLog | None = None,
    may_change: MayChange = None,
) -> RevocationReceipt:
    """Revoke a memory and what its source event said with the same words (see the
    module docstring). Revoking it again is acknowledged without another change.
    ``log`` collects what changed, for an undo (``memledger.write.undo``)."""
    log = ChangeLog() if log is None else log
    record = unit.get_record(tenant, memory_id)
    if record is None:
        raise MemoryNotFoundError(f"no memory {memory_id!r} for tenant {tenant!r}")
    if record.proposed_kind == "episode":  # the turn itself: forget all of it
        forgotten = forget_event(
            unit,
            tenant,
            record.source_event_id,
            reason=reason,
            now=now,
            log=log,
            may_change=may_change,
        )
        key = (record.subject, record.family)
        own = [r for r in forgotten.revocations if (r.subject, r.family) == key]
        others = tuple(r for r in forgotten.revocations if (r.subject, r.family) != key)
        if own:
            return replace(own[0], also=others)
        slot = unit.lock_family(tenant, record.subject, record.family)
        return _acknowledged(slot, reason=reason, now=now, also=others)
    slot = unit.lock_family(tenant, record.subject, record.family)
    targets = _event_records(unit, slot, record.source_event_id, open_only=True)
    already = unit.is_revoked_source(tenant, record.subject, record.family, record.source_event_id)
    if already and not targets:  # a retried revocation: acknowledge it again, change nothing
        return _acknowledged(slot, reason=reason, now=now)
    said = _event_records(unit, slot, record.source_event_id, open_only=False)
    words = _words(said)
    # the events that stated the same claim again (NOOP mentions) said these words too
    again = unit.mention_events(tenant, [r.memory_id for r in said])
    sources = sorted({record.source_event_id, *again})
    receipt = _revoke(unit, slot, targets, sources=sources, reason=reason, now=now, log=log)
    return _scrub_all(unit, receipt, sources, words, now=now, log=log, may_change=may_change)


def revoke_family(
    unit: UnitOfWork,
    tenant: str,
    subject: str,
    family: str,
    *,
    reason: str,
    now: datetime,
    log: ChangeLog | None = None,
) -> RevocationReceipt:
    """Revoke everything a family ever held: open records are closed as revoked, every
    source that wrote into it is revoked (so no audit view shows it either), and its
    words are taken out of the other records of those sources."""
    log = ChangeLog() if log is None else log
    slot = unit.lock_family(tenant, subject, family)
    everything = unit.family_records(tenant, subject, family, open_only=False)
    targets = [r for r in everything if r.superseded_at is None]
    again = unit.mention_events(tenant, [r.memory_id for r in everything])
    sources = sorted({r.source_event_id for r in everything} | set(again))
    receipt = _revoke(unit, slot, targets, sources=sources, reason=reason, now=now, log=log)
    words = _words(everything)  # the family's words, wherever its sources put them
    return _scrub_all(unit, receipt, sources, words, now=now, log=log)


def _scrub_all(
    unit: UnitOfWork,
    receipt: RevocationReceipt,
    sources: Sequence[str],
    words: set[str],
    *,
    now: datetime,
    log: ChangeLog,
    may_change: MayChange = None,
) -> RevocationReceipt:
    """``receipt`` with what taking ``words`` out of every source's other records did."""
    also: list[RevocationReceipt] = []
    redacted: list[str] = []
    for event_id in sources:
        more, scrubbed = _scrub(
            unit,
            receipt.tenant,
            event_id,
            set(words),
            reason=receipt.reason,
            now=now,
            log=log,
            may_change=may_change,
        )
        also.extend(more)
        redacted.extend(scrubbed)
    return replace(receipt, also=tuple(also), redacted=tuple(redacted))


def forget_event(
    unit: UnitOfWork,
    tenant: str,
    event_id: str,
    *,
    reason: str,
    now: datetime,
    log: ChangeLog | None = None,
    may_change: MayChange = None,
) -> ForgetReceipt:
    """Revoke every record derived from a source event, in every subject and family, and
    record the event as forgotten: no job, replay or re-extraction writes from it again.
    Forgetting it again is acknowledged with no revocations. With ``may_change``, only
    records about subjects it allows (see the module docstring)."""
    log = ChangeLog() if log is None else log
    if unit.get_event(tenant, event_id) is None:
        raise EventNotFoundError(f"no event {event_id!r} for tenant {tenant!r}")
    everything = unit.event_records(tenant, event_id, open_only=False)
    derived = [r for r in everything if _may(may_change, r.subject)]
    if len(derived) == len(everything):  # nothing of another namespace stops with it
        if not unit.is_forgotten(tenant, event_id):
            log.forgotten.append(event_id)
        unit.forget_event(tenant, event_id, at=now, reason=reason)
    receipts: list[RevocationReceipt] = []
    for subject, family in sorted({(r.subject, r.family) for r in derived}):
        slot = unit.lock_family(tenant, subject, family)
        targets = [r for r in derived if (r.subject, r.family) == (subject, family) and _open(r)]
        if not targets and unit.is_revoked_source(tenant, subject, family, event_id):
            continue
        receipts.append(
            _revoke(unit, slot, targets, sources=[event_id], reason=reason, now=now, log=log)
        )
    at = max([now, *(r.acknowledged_at for r in receipts)])
    return ForgetReceipt(
        tenant=tenant,
        event_id=event_id,
        revocations=tuple(receipts),
        acknowledged_at=at,
        reason=reason,
    )


def _open(record: MemoryRecord) -> bool:
    return record.superseded_at is None


def _event_records(
    unit: UnitOfWork, slot: FamilySlot, event_id: str, *, open_only: bool
) -> list[MemoryRecord]:
    return [
        r
        for r in unit.family_records(slot.tenant, slot.subject, slot.family, open_only=open_only)
        if r.source_event_id == event_id
    ]


def _words(records: Iterable[MemoryRecord]) -> set[str]:
    words: set[str] = set()
    for record in records:
        words |= revoked_words(record)
    return words


def _scrub(
    unit: UnitOfWork,
    tenant: str,
    event_id: str,
    words: set[str],
    *,
    reason: str,
    now: datetime,
    log: ChangeLog,
    may_change: MayChange = None,
) -> tuple[list[RevocationReceipt], list[str]]:
    """Take ``words`` out of the other open records of ``event_id`` the caller may
    change: revoke the claims that state them (their words join in), then re-issue the
    episodes without them."""
    receipts: list[RevocationReceipt] = []
    changed = bool(words)
    while changed:
        changed = False
        for record in unit.event_records(tenant, event_id, open_only=True):
            if not _may(may_change, record.subject):
                continue  # another namespace's record: left as it is
            if record.proposed_kind == "episode" or not states(record, words):
                continue
            slot = unit.lock_family(tenant, record.subject, record.family)
            every = _event_records(unit, slot, event_id, open_only=False)
            words |= _words(every)
            targets = [r for r in every if _open(r)]
            receipts.append(
                _revoke(unit, slot, targets, sources=[event_id], reason=reason, now=now, log=log)
            )
            changed = True
            break  # the event's records changed: read them again
    redacted: list[str] = []
    for record in unit.event_records(tenant, event_id, open_only=True):
        if not _may(may_change, record.subject):
            continue
        if record.proposed_kind == "episode" and _reissue(unit, record, words, now=now, log=log):
            redacted.append(record.memory_id)
    return receipts, redacted


def _reissue(
    unit: UnitOfWork, record: MemoryRecord, words: set[str], *, now: datetime, log: ChangeLog
) -> bool:
    """Re-issue an episode without ``words``: the original is closed as revoked, a new
    record with the redacted text takes its place (same window, next revision; the
    generation stays, so jobs of other turns are not turned away)."""
    value = record.value
    text = value.get("text") if isinstance(value, dict) else None
    if not isinstance(value, dict) or not isinstance(text, str):
        return False
    cleaned = redact(text, words)
    if cleaned == text:
        return False
    slot = unit.lock_family(record.tenant, record.subject, record.family)
    revision = slot.revision + 1
    at = family_time(slot, now)
    cause = stable_id("red", record.tenant, record.memory_id, str(revision))
    unit.close_record(record.tenant, record.memory_id, status="revoked", at=at, closed_by=cause)
    closed = replace(record, status="revoked", superseded_at=at, closed_by=cause)
    fresh = replace(
        record,
        memory_id=stable_id("mem", record.tenant, record.memory_id, "redacted", str(revision)),
        claim=redact(record.claim, words),
        value={**value, "text": cleaned},
        grounding=None if record.grounding is None else redact(record.grounding, words),
        recorded_at=at,
        revision=revision,
        generation=slot.generation,
        supersedes=record.memory_id,
    )
    unit.insert_record(fresh)
    for entry, action in ((closed, "revoked"), (fresh, "recorded")):
        unit.add_history(_entry(slot, entry, action, revision, at, f"{cause}: redacted"))
    unit.add_outbox(replace(closed, revision=revision), op="delete", at=at)
    unit.add_outbox(fresh, op="upsert", at=at)
    unit.put_family(replace(slot, revision=revision, updated_at=at))
    part = ChangePart(
        subject=record.subject,
        family=record.family,
        closed=(record.memory_id,),
        opened=(fresh.memory_id,),
    )
    log.add(part, cause=cause)
    return True


def _entry(
    slot: FamilySlot, record: MemoryRecord, action: str, revision: int, at: datetime, cause: str
) -> HistoryEntry:
    chosen: HistoryAction = "revoked" if action == "revoked" else "recorded"
    return history_entry(slot, record, chosen, revision=revision, at=at, cause=cause)


def _acknowledged(
    slot: FamilySlot, *, reason: str, now: datetime, also: tuple[RevocationReceipt, ...] = ()
) -> RevocationReceipt:
    return RevocationReceipt(
        tenant=slot.tenant,
        subject=slot.subject,
        family=slot.family,
        revision=slot.revision,
        generation=slot.generation,
        revoked=(),
        acknowledged_at=slot.updated_at or now,
        reason=reason,
        also=also,
    )


def _revoke(
    unit: UnitOfWork,
    slot: FamilySlot,
    targets: Sequence[MemoryRecord],
    *,
    sources: Sequence[str],
    reason: str,
    now: datetime,
    log: ChangeLog,
) -> RevocationReceipt:
    at = family_time(slot, now)
    revision, generation = slot.revision + 1, slot.generation + 1
    cause = revocation_cause(slot.tenant, slot.subject, slot.family, generation)
    part = ChangePart(
        subject=slot.subject,
        family=slot.family,
        closed=tuple(r.memory_id for r in targets),
        generation=generation,
    )
    log.add(part, cause=cause)
    gone = replace(slot, revision=revision, generation=generation)
    for record in targets:
        unit.close_record(slot.tenant, record.memory_id, status="revoked", at=at, closed_by=cause)
        closed = replace(record, status="revoked", superseded_at=at, closed_by=cause)
        unit.add_history(_entry(gone, closed, "revoked", revision, at, f"{cause}: {reason}"))
        unit.add_outbox(
            replace(closed, revision=revision, generation=generation), op="delete", at=at
        )
    for event_id in sources:
        unit.add_revoked_source(
            slot.tenant, slot.subject, slot.family, event_id=event_id, generation=generation
        )
    unit.add_revocation(slot.tenant, slot.subject, slot.family, generation=generation, at=at)
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
