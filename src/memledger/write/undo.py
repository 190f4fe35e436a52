"""Undo: a revocation, a forgotten event, a correction or an extractor's rollback,
reversed as a new revision (``memledger.domain.changes``).

Undoing a change, family by family, in one transaction:

1. what the change wrote and is still open is closed (``revoked``, ``closed_by`` the
   undo);
2. a revocation's revoked sources in the family are lifted, and the events it
   forgot are usable again;
3. what it closed is restored: each record again as a new record (same claim, value,
   source and scope, ``supersedes`` naming the one it restores), over the part of
   its valid time that no open record holds. Records written since keep their time:
   an undo fills gaps, it never closes what is true now (a record whose whole time
   is held is reported ``covered``; an erased one, ``erased``).

The family's revision moves once; history shows the revocation (or correction)
and the undo, each with its cause. The undo is itself a recorded change (kind
``undo``); undoing the same change again returns the first undo's receipt.

A revocation is not undone while a later revocation of the same family stands
(:class:`~memledger.errors.ConflictError`: undo that one first): lifting the
revoked sources could otherwise let the later revocation's words back in. An
episode that the revocation re-issued without its words gets its words back only
if nothing redacted it again since.

A **correction** is an event: undoing it closes the claims it wrote (not the turn's
episode) and restores what its decisions closed. A **rollback** of an extractor
version does the same for every event that version wrote, as one change, and may
re-derive those events with another extractor (:func:`rollback`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from memledger.domain.changes import (
    Change,
    ChangeKind,
    ChangeLog,
    ChangePart,
    NotRestored,
    RollbackReceipt,
    UndoReceipt,
)
from memledger.domain.intervals import Interval, subtract
from memledger.domain.records import (
    FamilyRevision,
    MemoryRecord,
    RecordStatus,
    SourceEvent,
    format_time,
)
from memledger.errors import ConflictError, InvalidInputError, NotFoundError
from memledger.ports import FamilySlot, UnitOfWork
from memledger.write.batch import stable_id
from memledger.write.history import FamilyStep, family_time, record_parts

Rederive = Callable[[UnitOfWork, SourceEvent, str], str]
"""Extract an event again and commit the claims in the unit, with the given derivation
(``Memory.rollback`` builds it); returns the receipt's outcome (``review``: nothing was
written)."""


def revocation_cause(tenant: str, subject: str, family: str, generation: int) -> str:
    """The ``closed_by`` a revocation writes on what it closes (``memledger.write.revoke``)."""
    return stable_id("rvk", tenant, subject, family, str(generation))


def record_change(
    unit: UnitOfWork,
    tenant: str,
    log: ChangeLog,
    *,
    kind: ChangeKind,
    reason: str,
    at: datetime,
) -> str | None:
    """Keep what ``log`` collected as one change; its id (``None``: nothing changed)."""
    if not log.parts and not log.forgotten:
        return None
    change_id = stable_id("chg", tenant, kind, *sorted(log.causes), *log.forgotten, format_time(at))
    change = Change(
        tenant=tenant,
        change_id=change_id,
        kind=kind,
        at=at,
        reason=reason,
        parts=tuple(log.parts),
        forgotten=tuple(log.forgotten),
    )
    unit.put_change(change, causes=log.causes)
    return change_id


def change_closing(unit: UnitOfWork, record: MemoryRecord) -> str:
    """The change that closed ``record``: a recorded change, or the event (a correction)
    whose decision closed it."""
    cause = record.closed_by
    if record.superseded_at is None or cause is None:
        raise InvalidInputError(f"memory {record.memory_id!r} is open: nothing to restore")
    owner = unit.change_of_cause(record.tenant, cause)
    if owner is not None:
        return owner
    if (
        unit.get_change(record.tenant, cause) is not None
        or unit.get_event(record.tenant, cause) is not None
    ):
        return cause
    raise NotFoundError(
        f"memory {record.memory_id!r} was closed by {cause!r}, which was not recorded as a"
        " change (a revocation made before changes were recorded cannot be undone)"
    )


def undo(unit: UnitOfWork, tenant: str, target: str, *, reason: str, now: datetime) -> UndoReceipt:
    """Undo the change ``target`` (a change id, or an event id: its correction). See the
    module docstring."""
    change = unit.get_change(tenant, target)
    if change is None:
        change = _correction(unit, tenant, target, reason=reason, now=now)
    if change.kind == "undo":
        raise InvalidInputError(
            f"{target!r} is an undo: it is not undone in turn (revoke or correct again)"
        )
    if change.undone_by is not None:
        return _repeated(unit, change)
    undo_id = stable_id("chg", tenant, "undo", change.change_id)
    _check_order(unit, change)
    unforgotten = []
    for event_id in change.forgotten:
        if unit.get_event(tenant, event_id) is not None:  # an erased event stays gone
            unit.unforget_event(tenant, event_id)
            unforgotten.append(event_id)
    inverted = invert(unit, tenant, change.parts, cause=undo_id, reason=reason, now=now)
    unit.put_change(
        Change(
            tenant=tenant,
            change_id=undo_id,
            kind="undo",
            at=inverted.at,
            reason=reason,
            parts=inverted.parts,
            undoes=change.change_id,
        )
    )
    unit.mark_undone(tenant, change.change_id, by=undo_id)
    return inverted.receipt(tenant, undo_id, change, reason=reason, unforgotten=tuple(unforgotten))


@dataclass(frozen=True, slots=True)
class Inverted:
    """What :func:`invert` did: per family, what it closed (``closed``) and restored
    (``opened``), as the parts of the change that records it."""

    parts: tuple[ChangePart, ...]
    not_restored: tuple[NotRestored, ...]
    revisions: tuple[FamilyRevision, ...]
    at: datetime

    def receipt(
        self,
        tenant: str,
        change_id: str,
        undid: Change,
        *,
        reason: str,
        unforgotten: tuple[str, ...],
    ) -> UndoReceipt:
        return UndoReceipt(
            tenant=tenant,
            change_id=change_id,
            undid=undid.change_id,
            kind=undid.kind,
            restored=tuple(i for p in self.parts for i in p.opened),
            closed=tuple(i for p in self.parts for i in p.closed),
            not_restored=self.not_restored,
            revisions=self.revisions,
            acknowledged_at=self.at,
            reason=reason,
            unforgotten=unforgotten,
        )


def invert(
    unit: UnitOfWork,
    tenant: str,
    parts: Iterable[ChangePart],
    *,
    cause: str,
    reason: str,
    now: datetime,
) -> Inverted:
    """Close what ``parts`` opened, lift their revoked sources and restore what they
    closed, one revision per family (steps 1 to 3 of the module docstring)."""
    by_family: dict[tuple[str, str], list[ChangePart]] = defaultdict(list)
    for part in parts:
        by_family[(part.subject, part.family)].append(part)
    done: list[ChangePart] = []
    missing: list[NotRestored] = []
    revisions: list[FamilyRevision] = []
    latest = now
    for (subject, family), group in sorted(by_family.items()):
        slot = unit.lock_family(tenant, subject, family)
        at = family_time(slot, now)
        latest = max(latest, at)
        step = _FamilyUndo(unit, slot, cause=f"{cause}: {reason}", closed_by=cause, at=at)
        wanted: list[tuple[str, bool]] = []
        for part in group:
            closed = [step.close(memory_id) for memory_id in part.opened]
            if part.generation is not None:
                unit.lift_revoked_sources(tenant, subject, family, generation=part.generation)
            wanted.extend((i, not all(closed)) for i in part.closed)
        for record_id, changed in wanted:
            missing.extend(step.restore(record_id, changed_since=changed))
        if not step.closed and not step.opened and not any(p.generation for p in group):
            continue
        unit.put_family(replace(slot, revision=step.revision, updated_at=at))
        revisions.append(
            FamilyRevision(
                subject=subject, family=family, revision=step.revision, generation=slot.generation
            )
        )
        done.append(
            ChangePart(
                subject=subject,
                family=family,
                closed=tuple(step.closed),
                opened=tuple(step.opened),
            )
        )
    return Inverted(tuple(done), tuple(missing), tuple(revisions), latest)


class _FamilyUndo(FamilyStep):
    """Closes and restores records of one family at its next revision."""

    def __init__(
        self, unit: UnitOfWork, slot: FamilySlot, *, cause: str, closed_by: str, at: datetime
    ) -> None:
        super().__init__(unit, slot, cause=cause, at=at)
        self.closed_by = closed_by
        self.closed: list[str] = []
        self.opened: list[str] = []
        self._live: dict[str, MemoryRecord] | None = None
        self._statuses: dict[str, RecordStatus] | None = None

    def live(self) -> dict[str, MemoryRecord]:
        if self._live is None:
            slot = self.slot
            self._live = {
                r.memory_id: r
                for r in self.unit.family_records(
                    slot.tenant, slot.subject, slot.family, open_only=True
                )
            }
        return self._live

    def close(self, memory_id: str) -> bool:
        """Close ``memory_id`` if it is open; whether it was."""
        record = self.live().pop(memory_id, None)
        if record is None:  # closed (or erased) since: nothing to close
            return False
        self.unit.close_record(
            record.tenant, memory_id, status="revoked", at=self.at, closed_by=self.closed_by
        )
        closed = replace(record, status="revoked", superseded_at=self.at, closed_by=self.closed_by)
        self._history(closed, "closed")
        self.unit.add_outbox(replace(closed, revision=self.revision), op="delete", at=self.at)
        self.closed.append(memory_id)
        return True

    def restore(self, memory_id: str, *, changed_since: bool = False) -> list[NotRestored]:
        """Write ``memory_id`` again over what no open record holds of its valid time.
        ``changed_since``: what replaced it was changed again since; an episode (the
        text a revocation redacted) then keeps that later change."""
        record = self.unit.get_record(self.slot.tenant, memory_id)
        if record is None:
            return [NotRestored(memory_id=memory_id, why="erased")]
        if record.superseded_at is None:
            return [NotRestored(memory_id=memory_id, why="open")]
        if changed_since and record.proposed_kind == "episode":
            return [NotRestored(memory_id=memory_id, why="changed")]
        if self.unit.is_forgotten(record.tenant, record.source_event_id):
            return [NotRestored(memory_id=memory_id, why="forgotten")]
        slot = self.slot
        if self.unit.is_revoked_source(
            slot.tenant, slot.subject, slot.family, record.source_event_id
        ):
            return [NotRestored(memory_id=memory_id, why="revoked")]
        status = self._status(record)
        pieces = [Interval(record.valid_from, record.valid_until)]
        if status == "active" and record.scope_authorized and record.proposed_kind != "episode":
            held = [
                Interval(r.valid_from, r.valid_until)
                for r in self.live().values()
                if r.scope == record.scope
                and r.status == "active"
                and r.scope_authorized
                and r.proposed_kind != "episode"
            ]
            pieces = list(subtract(pieces[0], held))
        if not pieces:
            return [NotRestored(memory_id=memory_id, why="covered")]
        for piece in pieces:
            fresh = replace(
                record,
                memory_id=stable_id(
                    "mem",
                    record.tenant,
                    memory_id,
                    "restored",
                    self.closed_by,
                    format_time(piece.start),
                ),
                valid_from=piece.start,
                valid_until=piece.end,
                status=status,
                recorded_at=self.at,
                superseded_at=None,
                closed_by=None,
                revision=self.revision,
                generation=self.slot.generation,
                supersedes=memory_id,
            )
            self.unit.insert_record(fresh)
            self._history(fresh, "restored")
            self.unit.add_outbox(fresh, op="upsert", at=self.at)
            self.live()[fresh.memory_id] = fresh
            self.opened.append(fresh.memory_id)
        return []

    def _status(self, record: MemoryRecord) -> RecordStatus:
        """The status ``record`` was written with (closing it overwrote it)."""
        if self._statuses is None:
            slot = self.slot
            self._statuses = {
                e.memory_id: e.status
                for e in self.unit.history(slot.tenant, slot.subject, slot.family)
                if e.action in ("recorded", "restored")
            }
        return self._statuses.get(record.memory_id, "active")


def _check_order(unit: UnitOfWork, change: Change) -> None:
    """Refuse an undo that a later change stands in the way of: a record it would restore
    whose source event was forgotten since, or a later revocation of a family whose
    revoked sources it would lift (either would otherwise let that change's words back)."""
    wanted = [i for p in change.parts for i in p.closed]
    for record in unit.get_records(change.tenant, wanted).values():
        event_id = record.source_event_id
        if event_id not in change.forgotten and unit.is_forgotten(change.tenant, event_id):
            raise ConflictError(
                f"event {event_id!r} was forgotten after change {change.change_id!r}; undo"
                " that first"
            )
    ours = {(p.subject, p.family, p.generation) for p in change.parts if p.generation}
    for subject, family, generation in sorted(ours):
        assert generation is not None
        for later in unit.revocation_generations(change.tenant, subject, family):
            if later <= generation or (subject, family, later) in ours:
                continue
            cause = revocation_cause(change.tenant, subject, family, later)
            owner = unit.change_of_cause(change.tenant, cause)
            stored = None if owner is None else unit.get_change(change.tenant, owner)
            if stored is None or stored.undone_by is None:
                raise ConflictError(
                    f"family {family!r} of {subject!r} was revoked again after change"
                    f" {change.change_id!r} (by {owner or cause!r}); undo that first"
                )


def _correction(
    unit: UnitOfWork, tenant: str, event_id: str, *, reason: str, now: datetime
) -> Change:
    """An event's decisions as a change: the claims it wrote (open, not its turn's
    episode) and the records its decisions closed. Kept, so a repeated undo finds it."""
    if unit.get_event(tenant, event_id) is None:
        raise NotFoundError(f"no change or event {event_id!r} for tenant {tenant!r}")
    parts = _event_parts(unit, tenant, [event_id], wrote=lambda r: True)
    if not parts:
        raise InvalidInputError(
            f"event {event_id!r} closed and wrote no claim that an undo could reverse"
        )
    change = Change(
        tenant=tenant, change_id=event_id, kind="correction", at=now, reason=reason, parts=parts
    )
    unit.put_change(change)
    return change


def _event_parts(
    unit: UnitOfWork,
    tenant: str,
    event_ids: Sequence[str],
    *,
    wrote: Callable[[MemoryRecord], bool],
) -> tuple[ChangePart, ...]:
    """Per family, what the events' decisions closed (``closed``) and the open claims
    they wrote that ``wrote`` selects (``opened``): the parts whose inversion takes
    the events back. Turn episodes are kept (the turn happened)."""
    closed: dict[tuple[str, str], list[str]] = defaultdict(list)
    opened: dict[tuple[str, str], list[str]] = defaultdict(list)
    for event_id in event_ids:
        for record in unit.records_closed_by(tenant, event_id):
            if record.status in ("superseded", "retracted"):
                closed[(record.subject, record.family)].append(record.memory_id)
        for record in unit.event_records(tenant, event_id, open_only=True):
            if record.proposed_kind != "episode" and wrote(record):
                opened[(record.subject, record.family)].append(record.memory_id)
    for (subject, family), ids in closed.items():
        # the remnants the decisions left of what they closed: the originals come back whole
        gone = set(ids)
        opened[(subject, family)].extend(
            r.memory_id
            for r in unit.family_records(tenant, subject, family, open_only=True)
            if r.supersedes in gone and r.memory_id not in opened[(subject, family)]
        )
    return tuple(
        ChangePart(
            subject=subject,
            family=family,
            closed=tuple(closed.get((subject, family), ())),
            opened=tuple(opened.get((subject, family), ())),
        )
        for subject, family in sorted(closed.keys() | opened.keys())
    )


def _repeated(unit: UnitOfWork, change: Change) -> UndoReceipt:
    """The receipt of an undo already made, rebuilt from its recorded change."""
    assert change.undone_by is not None
    done = unit.get_change(change.tenant, change.undone_by)
    if done is None:  # pragma: no cover - written in the same transaction
        raise NotFoundError(f"undo {change.undone_by!r} of {change.change_id!r} is missing")
    return UndoReceipt(
        tenant=change.tenant,
        change_id=done.change_id,
        undid=change.change_id,
        kind=change.kind,
        restored=tuple(i for p in done.parts for i in p.opened),
        closed=tuple(i for p in done.parts for i in p.closed),
        not_restored=(),
        revisions=(),
        acknowledged_at=done.at,
        reason=done.reason,
        duplicate=True,
    )


def rollback(
    unit: UnitOfWork,
    tenant: str,
    name: str,
    version: str,
    *,
    since: datetime | None,
    reason: str,
    now: datetime,
    rederive: Rederive | None = None,
) -> RollbackReceipt:
    """Take back what extractor ``name@version`` wrote (recorded at or after ``since``)
    as one change: every event it extracted is inverted as in an undo of a correction,
    restricted to that extractor's records (turn episodes and what callers stated stay).
    With ``rederive``, each of those events is then extracted again by another extractor
    and committed at its place in the business timeline (``commit_event(rederived=True)``),
    in the same change: undoing the rollback closes the re-derived records and restores
    the extractor's."""
    ours = (name, version)

    def wrote(record: MemoryRecord) -> bool:
        return (record.extractor.name, record.extractor.version) == ours

    found = unit.extractor_records(tenant, name, version, since=since)
    events = sorted({r.source_event_id for r in found if r.proposed_kind != "episode"})
    change_id = stable_id(
        "chg",
        tenant,
        "rollback",
        name,
        version,
        format_time(since) if since else "",
        format_time(now),
    )
    parts = _event_parts(unit, tenant, events, wrote=wrote)
    inverted = invert(unit, tenant, parts, cause=change_id, reason=reason, now=now)
    done = list(inverted.parts)
    held: list[str] = []
    rederived: list[str] = []
    if rederive is not None:
        stored = [s.event for s in (unit.get_event(tenant, e) for e in events) if s is not None]
        stored.sort(key=lambda e: (e.occurred_at, e.sequence or 0, e.event_id))
        for event in stored:
            before_open = {
                r.memory_id for r in unit.event_records(tenant, event.event_id, open_only=True)
            }
            before_closed = {r.memory_id for r in unit.records_closed_by(tenant, event.event_id)}
            outcome = rederive(unit, event, change_id)
            if outcome == "review":
                held.append(event.event_id)
                continue
            opened = [
                r
                for r in unit.event_records(tenant, event.event_id, open_only=True)
                if r.memory_id not in before_open
            ]
            closed = [
                r
                for r in unit.records_closed_by(tenant, event.event_id)
                if r.memory_id not in before_closed
            ]
            rederived.extend(r.memory_id for r in opened)
            gone = {r.memory_id for r in closed}
            for subject, family in sorted({(r.subject, r.family) for r in closed}):
                opened.extend(  # the remnants it left of what it closed
                    r
                    for r in unit.family_records(tenant, subject, family, open_only=True)
                    if r.supersedes in gone
                )
            for subject, family in sorted({(r.subject, r.family) for r in (*opened, *closed)}):
                done.append(
                    ChangePart(
                        subject=subject,
                        family=family,
                        closed=tuple(
                            r.memory_id
                            for r in closed
                            if (r.subject, r.family) == (subject, family)
                        ),
                        opened=tuple(
                            r.memory_id
                            for r in opened
                            if (r.subject, r.family) == (subject, family)
                        ),
                    )
                )
    recorded = record_parts(
        unit,
        tenant,
        change_id=change_id,
        kind="rollback",
        at=inverted.at,
        reason=reason,
        parts=done,
    )
    return RollbackReceipt(
        tenant=tenant,
        change_id=recorded,
        extractor=f"{name}@{version}",
        since=since,
        events=tuple(events),
        closed=tuple(i for p in inverted.parts for i in p.closed),
        restored=tuple(i for p in inverted.parts for i in p.opened),
        not_restored=inverted.not_restored,
        rederived=tuple(rederived),
        held=tuple(held),
        acknowledged_at=inverted.at,
        reason=reason,
    )
